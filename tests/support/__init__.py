"""Hand fakes of ragbot's own protocols, shared by the chat tests."""
