"""FakeWebSearch: DuckDuckGo's HTML page and Instant Answer API, Google's Custom Search JSON API, and web pages."""
