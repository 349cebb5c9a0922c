//! pixelgrad-nn (in progress)
