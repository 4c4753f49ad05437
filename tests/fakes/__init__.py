"""Local fakes of the external APIs, speaking their wire protocols."""
