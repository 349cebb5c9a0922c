//! pixelgrad-conformance (in progress)
