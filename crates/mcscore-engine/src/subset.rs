//! `--multiple-choice-tasks N`: the same random subset, in the same order, as
//! llama-perplexity (llama.cpp tools/perplexity/perplexity.cpp).

use rand_mt::Mt;

/// Picks `n` of `n_tasks` indices exactly as llama-perplexity does: an
/// `std::mt19937` seeded with 1, and the pick computed in float32.
/// With `n >= n_tasks` every task is scored in file order.
pub fn select_tasks(n_tasks: usize, n: usize) -> Vec<usize> {
    if n >= n_tasks {
        return (0..n_tasks).collect();
    }
    let mut rng = Mt::new(1);
    // llama.cpp: `float scale = 1.f/(1.f + (float) std::mt19937::max())`, which
    // rounds to exactly 2^-32 in float32.
    let scale: f32 = 1.0 / (1.0 + u32::MAX as f32);
    let mut aux: Vec<usize> = (0..n_tasks).collect();
    let mut picks = Vec::with_capacity(n);
    for _ in 0..n {
        let j = (scale * rng.next_u32() as f32 * aux.len() as f32) as usize;
        // A draw that rounds up to 2^32 would index one past the end in
        // llama.cpp (undefined behaviour); take the last element instead.
        let j = j.min(aux.len() - 1);
        picks.push(aux.swap_remove(j));
    }
    picks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_llama_perplexity_order() {
        // llama-perplexity's picks of 100 of 300 tasks (a run of the reference build).
        let picks = select_tasks(300, 100);
        assert_eq!(&picks[..10], &[125, 298, 214, 276, 0, 37, 88, 292, 42, 68]);
        let mut sorted = picks.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 100, "picks are distinct");
    }

    #[test]
    fn all_tasks_when_n_is_not_smaller() {
        assert_eq!(select_tasks(3, 3), vec![0, 1, 2]);
        assert_eq!(select_tasks(3, 10), vec![0, 1, 2]);
    }
}
