"""The Slack adapter: slack-bolt (async) over the Events API or Socket Mode, native streaming, OAuth installs."""
