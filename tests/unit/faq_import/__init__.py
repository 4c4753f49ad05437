"""FAQ import: parsing and validating FAQ sheets."""
