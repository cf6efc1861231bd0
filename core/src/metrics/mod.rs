//! Metrics (placeholder, filled in next).
