"""Security drills: each test names an attack and shows it fails (issue 19)."""
