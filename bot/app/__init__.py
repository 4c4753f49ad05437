"""The running service: settings, preflight checks, composition, HTTP server, health, platform loading."""
