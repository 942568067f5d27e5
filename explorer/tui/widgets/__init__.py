"""One widget per screen area."""
