//! in progress
