//! proto (being written)
