//! pixelgrad-cpu (in progress)
