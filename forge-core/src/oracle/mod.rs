//! Oracle support
