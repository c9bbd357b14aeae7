//! `--multiple-choice-tasks N`, `--winogrande-tasks N` and `--hellaswag-tasks N`:
//! the same random subsets, in the same order, as llama-perplexity.

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
        // n < n_tasks, so at least two tasks remain at every draw
        let j = j.min(aux.len() - 1);
        picks.push(aux.swap_remove(j));
    }
    picks
}

/// HellaSwag's order: llama-perplexity always shuffles, drawing each task with
/// `std::uniform_int_distribution<size_t>` from an `std::mt19937` seeded with 1
/// and removing it from the remaining ones; it scores `min(n, n_tasks)` of them.
pub fn hellaswag_order(n_tasks: usize, n: usize) -> Vec<usize> {
    let mut rng = Mt::new(1);
    let mut remaining: Vec<usize> = (0..n_tasks).collect();
    (0..n.min(n_tasks)).map(|_| remaining.remove(uniform_below(&mut rng, remaining.len()))).collect()
}

/// libstdc++'s `uniform_int_distribution(0, range - 1)` over a 32-bit engine
/// (GCC 11 and later): Lemire's multiply-and-reject, `_S_nd` in its source.
fn uniform_below(rng: &mut Mt, range: usize) -> usize {
    let range = u32::try_from(range).expect("HellaSwag files hold far fewer than 2^32 tasks");
    let mut product = u64::from(rng.next_u32()) * u64::from(range);
    if (product as u32) < range {
        // range >= 1: hellaswag_order draws only while tasks remain
        let threshold = range.wrapping_neg() % range;
        while (product as u32) < threshold {
            product = u64::from(rng.next_u32()) * u64::from(range);
        }
    }
    (product >> 32) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hellaswag_order_matches_libstdcxx() {
        // The picks of a C++ program doing what llama-perplexity does, built with g++ 12.
        let order = hellaswag_order(10042, 200);
        assert_eq!(&order[..10], &[4187, 10013, 7233, 9363, 1, 1286, 3036, 10032, 1474, 2371]);
        assert_eq!(&order[195..], &[3024, 29, 7760, 6195, 1541]);
        assert_eq!(hellaswag_order(7, 7), vec![2, 6, 4, 5, 0, 1, 3]);
        assert_eq!(hellaswag_order(7, 100).len(), 7);
        assert_eq!(&hellaswag_order(10042, 10042)[10039..], &[1816, 6393, 7789]);
    }

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
