"""Flower ServerApp for federations of pixelgrad nodes."""
