//! How many CPU threads llama.cpp gets. More threads than free cores makes llama.cpp's workers
//! spin against each other and throughput collapses, so the default leaves one core free.

/// The number of cores minus one, at least 1.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1)).max(1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn at_least_one() {
        assert!(super::default_threads() >= 1);
    }
}
