"""The turn boundary: the conversation manager, its limits, answering, and the stored turns."""
