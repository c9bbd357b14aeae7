//! The tokens a fill decodes, merged into a prefix tree: a token sequence that
//! several tasks share (a few-shot preamble, one question stem rendered in 48
//! formats) is decoded once, as KV cells that belong to every sequence below
//! them. One llama.cpp sequence id per leaf; numbering leaves depth-first gives
//! every node a contiguous range of sequence ids.

use std::collections::HashMap;
use std::ops::Range;

use llama_cpp_2::token::LlamaToken;

use crate::prepare::PreparedTask;

/// Parent of a root node.
const NO_PARENT: u32 = u32::MAX;

#[derive(Debug, Default)]
pub(crate) struct Trie {
    tokens: Vec<LlamaToken>,
    parents: Vec<u32>,
    depths: Vec<u32>,
    children: Vec<u32>,
    lookup: HashMap<(u32, i32), u32>,
    leaves: usize,
}

/// Where each node's KV cell lives: the sequence ids that see it.
#[derive(Debug)]
pub(crate) struct Layout {
    /// Per node, the leaves below it (as leaf numbers from 0).
    pub seqs: Vec<Range<i32>>,
    /// The nodes every leaf passes through, from the root, in depth order.
    pub chain: Vec<u32>,
}

impl Trie {
    /// Nodes, i.e. tokens decoded when nothing is cached.
    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Sequence ids the fill needs.
    pub(crate) fn leaves(&self) -> usize {
        self.leaves
    }

    pub(crate) fn token(&self, node: u32) -> LlamaToken {
        self.tokens[node as usize]
    }

    /// The node before this one in its sequences; `None` for a root.
    pub(crate) fn parent(&self, node: u32) -> Option<u32> {
        Some(self.parents[node as usize]).filter(|&p| p != NO_PARENT)
    }

    /// The position of a node's token in its sequences.
    pub(crate) fn depth(&self, node: u32) -> u32 {
        self.depths[node as usize]
    }

    fn child(&mut self, parent: u32, token: LlamaToken) -> u32 {
        if let Some(&node) = self.lookup.get(&(parent, token.0)) {
            return node;
        }
        // a decoded fill's tree fits n_ctx (checked <= u32::MAX); a planning tree one huge task past -b could wrap: a miscount, no panic
        let node = self.tokens.len() as u32;
        let depth = if parent == NO_PARENT {
            self.leaves += 1;
            0
        } else {
            let p = parent as usize;
            if self.children[p] > 0 {
                self.leaves += 1;
            }
            self.children[p] += 1;
            self.depths[p] + 1
        };
        self.tokens.push(token);
        self.parents.push(parent);
        self.depths.push(depth);
        self.children.push(0);
        self.lookup.insert((parent, token.0), node);
        node
    }

    /// Adds a token sequence and returns its nodes, one per token.
    pub(crate) fn insert_sequence(&mut self, tokens: &[LlamaToken]) -> Vec<u32> {
        let mut last = NO_PARENT;
        tokens
            .iter()
            .map(|&token| {
                last = self.child(last, token);
                last
            })
            .collect()
    }

    /// Adds a task's decoded tokens (its prefix, then each option's tokens but
    /// the last) and returns, per option, the nodes whose logits score its
    /// tokens: node `i` predicts the option's token `i`.
    pub(crate) fn insert(&mut self, task: &PreparedTask) -> Vec<Vec<u32>> {
        let mut last = NO_PARENT;
        for &token in &task.prefix {
            last = self.child(last, token);
        }
        task.continuations
            .iter()
            .map(|cont| {
                let mut scoring = Vec::with_capacity(cont.len());
                let mut at = last;
                scoring.push(at);
                // every continuation is non-empty: prepare refused an option with nothing after the prefix
                for &token in &cont[..cont.len() - 1] {
                    at = self.child(at, token);
                    scoring.push(at);
                }
                scoring
            })
            .collect()
    }

    /// Numbers the leaves depth-first and finds the chain every leaf shares.
    pub(crate) fn layout(&self) -> Layout {
        let n = self.len();
        let mut kids: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut roots = Vec::new();
        for node in 0..n as u32 {
            match self.parents[node as usize] {
                NO_PARENT => roots.push(node),
                p => kids[p as usize].push(node),
            }
        }
        let mut seqs = vec![0..0; n];
        let mut next_leaf = 0i32;
        // Iterative depth-first walk: (node, index of the next child to visit).
        let mut pending: Vec<(u32, usize)> = Vec::new();
        for &root in &roots {
            pending.push((root, 0));
            seqs[root as usize].start = next_leaf;
            while let Some((node, k)) = pending.pop() {
                let children = &kids[node as usize];
                if children.is_empty() {
                    next_leaf += 1;
                }
                if k < children.len() {
                    pending.push((node, k + 1));
                    let child = children[k];
                    seqs[child as usize].start = next_leaf;
                    pending.push((child, 0));
                } else {
                    seqs[node as usize].end = next_leaf;
                }
            }
        }
        let mut chain = Vec::new();
        if let [root] = roots[..] {
            let mut node = root;
            loop {
                chain.push(node);
                match kids[node as usize][..] {
                    [only] => node = only,
                    _ => break,
                }
            }
        }
        Layout { seqs, chain }
    }
}

/// A fill's tasks in one prefix tree, with the nodes whose logits rows
/// scoring reads. The planner builds it to decide what a fill may take from
/// the previous fill's cache; the decode loop, to decode it.
pub(crate) struct FillTree {
    pub trie: Trie,
    /// Per task, per option: the nodes whose rows score its tokens.
    pub scoring: Vec<Vec<Vec<u32>>>,
    pub layout: Layout,
    /// Per node: whether its logits row is read.
    pub has_row: Vec<bool>,
}

impl FillTree {
    pub(crate) fn new(group: &[PreparedTask]) -> FillTree {
        let mut trie = Trie::default();
        let scoring: Vec<Vec<Vec<u32>>> = group.iter().map(|t| trie.insert(t)).collect();
        let layout = trie.layout();
        let mut has_row = vec![false; trie.len()];
        for (task, options) in group.iter().zip(&scoring) {
            for (scored, nodes) in task.scored.iter().zip(options) {
                // insert gave one node per continuation token, and scored lies within the continuation
                for &node in &nodes[scored.clone()] {
                    has_row[node as usize] = true;
                }
            }
        }
        FillTree { trie, scoring, layout, has_row }
    }

    /// The tokens every task of the fill shares, from the first.
    pub(crate) fn chain_tokens(&self) -> Vec<LlamaToken> {
        self.layout.chain.iter().map(|&n| self.trie.token(n)).collect()
    }

    /// How many of the chain's tokens a cache may provide: those before the
    /// first whose logits row this fill reads (a cached cell has no row).
    pub(crate) fn cacheable(&self) -> usize {
        self.layout.chain.iter().position(|&n| self.has_row[n as usize]).unwrap_or(self.layout.chain.len())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A task of these prefix and option tokens, every option token scored.
    pub(crate) fn task(prefix: &[i32], options: &[&[i32]]) -> PreparedTask {
        PreparedTask {
            index: 0,
            prefix: prefix.iter().map(|&t| LlamaToken(t)).collect(),
            continuations: options.iter().map(|o| o.iter().map(|&t| LlamaToken(t)).collect()).collect(),
            scored: options.iter().map(|o| 0..o.len()).collect(),
            labels: vec![false; options.len()],
            option_chars: vec![1; options.len()],
            option_bytes: vec![1; options.len()],
            media: None,
        }
    }

    #[test]
    fn one_task_is_its_prefix_plus_each_options_tokens_but_the_last() {
        let mut trie = Trie::default();
        let t = task(&[1, 2, 3], &[&[10], &[11, 12, 13], &[14, 15]]);
        let scoring = trie.insert(&t);
        assert_eq!(trie.len(), t.required_tokens());
        assert_eq!(scoring, vec![vec![2], vec![2, 3, 4], vec![2, 5]]);
        // Option 0 ends at the prefix, options 1 and 2 branch from it: two leaves.
        assert_eq!(trie.leaves(), 2);
        let layout = trie.layout();
        assert_eq!(layout.chain, vec![0, 1, 2]);
        assert_eq!(layout.seqs[0], 0..2);
        assert_eq!((layout.seqs[3].clone(), layout.seqs[4].clone(), layout.seqs[5].clone()), (0..1, 0..1, 1..2));
    }

    #[test]
    fn shared_stems_are_stored_once_and_leaf_ranges_nest() {
        let mut trie = Trie::default();
        trie.insert(&task(&[1, 2, 3, 4], &[&[10], &[11]]));
        trie.insert(&task(&[1, 2, 3, 5], &[&[10], &[11]]));
        trie.insert(&task(&[1, 2, 6], &[&[10], &[11]]));
        assert_eq!(trie.len(), 6);
        assert_eq!(trie.leaves(), 3);
        let layout = trie.layout();
        assert_eq!(layout.chain, vec![0, 1]);
        assert_eq!(layout.seqs[1], 0..3);
        assert_eq!(layout.seqs[2], 0..2);
        assert_eq!((layout.seqs[3].clone(), layout.seqs[4].clone(), layout.seqs[5].clone()), (0..1, 1..2, 2..3));
    }

    #[test]
    fn tasks_with_different_first_tokens_share_no_chain() {
        let mut trie = Trie::default();
        trie.insert(&task(&[1], &[&[10], &[11]]));
        trie.insert(&task(&[2], &[&[10], &[11]]));
        let layout = trie.layout();
        assert!(layout.chain.is_empty());
        assert_eq!((layout.seqs[0].clone(), layout.seqs[1].clone()), (0..1, 1..2));
    }
}
