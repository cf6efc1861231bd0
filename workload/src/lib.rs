//! Workload input (being written).
