//! pixelgrad-data (in progress)
