//! Seeded generators of synthetic workflows with the shapes of well-known scientific workflows,
//! after the structural characterizations of Bharathi et al. (2008, "Characterization of
//! scientific workflows", WORKS'08, §3: the Montage and Epigenomics DAGs) and Juve et al. (2013,
//! "Characterizing and profiling scientific workflows", FGCS 29(3), §3), plus a plain fork-join
//! and a chain.
//!
//! * **Montage** of `n` images: `n` mProjectPP (entry, one per image); one mDiffFit per pair of
//!   overlapping images, after the two mProjectPP of the pair; mConcatFit after every mDiffFit;
//!   mBgModel after it; `n` mBackground, each after mBgModel and its own image's mProjectPP;
//!   mImgtbl after every mBackground; then mAdd, mShrink and mJPEG in a chain. Which images
//!   overlap is the grid's reading: the images tile a grid `⌈√n⌉` wide, row by row, and each
//!   overlaps its right and lower neighbours, so the pairs are the grid's horizontal and vertical
//!   edges. `2n + pairs + 6` nodes.
//! * **Epigenomics** of `c` chunks: fastqSplit (entry) fans out into `c` parallel pipelines of
//!   filterContams → sol2sanger → fastq2bfq → map; mapMerge after every map; then maqIndex and
//!   pileup in a chain. One lane (one fastqSplit) is the grid's reading of the publications'
//!   several lanes. `4c + 4` nodes.
//! * **Fork-join** of `k` workers: fork, `k` workers after it, join after them. `k + 2` nodes.
//! * **Chain** of `m` stages, each after the one before. `m` nodes.
//!
//! **Run times** (the grid's reading; the publications' measured times are not copied): every
//! task takes one processor, and its run time on the reference machine (benchmark
//! [`REFERENCE_BENCHMARK`]) is drawn uniformly in `[m/2, 3m/2]` whole seconds around its task
//! type's mean `m` ([`mean_runtime`]), chosen so that, as the characterizations describe, Montage
//! is many short tasks around a sequential core of single tasks (mConcatFit, mBgModel, mAdd) and
//! Epigenomics spends most of its time in `map`. A task's estimate is its run time plus a draw in
//! `[0, run/2]` (users over-estimate; a job is never killed at its estimate). Sizes are drawn
//! uniformly in [`size_range`]. Every draw comes from the generator given, so a seed gives one
//! workflow.

use gridsched_core::model::{Job, Node, Workflow, WorkflowText};
use rand::{Rng, RngExt};

/// The benchmark score of the machine the run times are given for (the slowest site's of the
/// `workflows` experiment, so that a task runs nowhere longer than its run time).
pub const REFERENCE_BENCHMARK: u32 = 50;

/// A workflow shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Shape {
    /// Montage (astronomy mosaics).
    Montage,
    /// Epigenomics (genome sequencing).
    Epigenomics,
    /// Fork-join.
    ForkJoin,
    /// Chain (pipeline).
    Chain,
}

impl Shape {
    /// Every shape.
    pub const ALL: [Shape; 4] = [
        Shape::Montage,
        Shape::Epigenomics,
        Shape::ForkJoin,
        Shape::Chain,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Montage => "montage",
            Shape::Epigenomics => "epigenomics",
            Shape::ForkJoin => "fork-join",
            Shape::Chain => "chain",
        }
    }

    /// The shape named `name`.
    pub fn parse(name: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The sizes drawn for a shape, inclusive: Montage's images, Epigenomics' chunks, fork-join's
/// workers, the chain's stages.
pub fn size_range(shape: Shape) -> (u32, u32) {
    match shape {
        Shape::Montage => (9, 25),
        Shape::Epigenomics => (8, 24),
        Shape::ForkJoin => (16, 48),
        Shape::Chain => (6, 14),
    }
}

/// The mean run time, in seconds on the reference machine, of a task type (the grid's reading).
pub fn mean_runtime(task: &str) -> i64 {
    match task {
        "mProjectPP" => 90,
        "mDiffFit" => 30,
        "mConcatFit" => 60,
        "mBgModel" => 120,
        "mBackground" => 30,
        "mImgtbl" => 30,
        "mAdd" => 240,
        "mShrink" => 60,
        "mJPEG" => 15,
        "fastqSplit" => 60,
        "filterContams" => 30,
        "sol2sanger" => 15,
        "fastq2bfq" => 30,
        "map" => 600,
        "mapMerge" => 90,
        "maqIndex" => 60,
        "pileup" => 120,
        "fork" => 30,
        "work" => 240,
        "join" => 60,
        "stage" => 180,
        _ => 60,
    }
}

/// Builds the nodes of one workflow, each a task of a type with its run time drawn.
struct Builder<'a, R: Rng> {
    rng: &'a mut R,
    nodes: Vec<Node>,
}

impl<R: Rng> Builder<'_, R> {
    /// Adds task `task` numbered `i` (or alone, `None`) after `parents`; its name.
    fn add(&mut self, task: &str, i: Option<u32>, parents: &[String]) -> String {
        let name = match i {
            Some(i) => format!("{task}_{i}"),
            None => task.to_string(),
        };
        let m = mean_runtime(task);
        let run = self.rng.random_range(m / 2..=m + m / 2).max(1);
        let estimate = run + self.rng.random_range(0..=run / 2);
        let mut job = Job::new(0, 0, 1, estimate, run);
        job.benchmark = Some(REFERENCE_BENCHMARK);
        self.nodes.push(Node {
            name: name.clone(),
            parents: parents.to_vec(),
            retries: 0,
            retry_unless_exit: None,
            abort_on_exit: None,
            done: false,
            outputs: Vec::new(),
            job,
        });
        name
    }

    fn finish(self, name: String) -> Workflow {
        Workflow::new(WorkflowText {
            name,
            nodes: self.nodes,
        })
        .expect("generated workflows are acyclic, their names unique")
    }
}

/// The overlapping pairs of `n` images tiled `⌈√n⌉` wide: each image with its right and lower
/// neighbours.
pub fn montage_pairs(n: u32) -> Vec<(u32, u32)> {
    let w = (1..=n).find(|w| w * w >= n).unwrap_or(1);
    let mut pairs = Vec::new();
    for i in 0..n {
        if (i + 1) % w != 0 && i + 1 < n {
            pairs.push((i, i + 1));
        }
        if i + w < n {
            pairs.push((i, i + w));
        }
    }
    pairs
}

/// A Montage workflow of `n` images.
pub fn montage(n: u32, rng: &mut impl Rng) -> Workflow {
    let mut b = Builder {
        rng,
        nodes: Vec::new(),
    };
    let projected: Vec<String> = (0..n).map(|i| b.add("mProjectPP", Some(i), &[])).collect();
    let diffs: Vec<String> = (montage_pairs(n).into_iter().enumerate())
        .map(|(k, (i, j))| {
            let parents = [projected[i as usize].clone(), projected[j as usize].clone()];
            b.add("mDiffFit", Some(k as u32), &parents)
        })
        .collect();
    let concat = b.add("mConcatFit", None, &diffs);
    let model = b.add("mBgModel", None, &[concat]);
    let corrected: Vec<String> = (0..n)
        .map(|i| {
            let parents = [model.clone(), projected[i as usize].clone()];
            b.add("mBackground", Some(i), &parents)
        })
        .collect();
    let table = b.add("mImgtbl", None, &corrected);
    let add = b.add("mAdd", None, &[table]);
    let shrink = b.add("mShrink", None, &[add]);
    b.add("mJPEG", None, &[shrink]);
    b.finish(format!("montage-{n}"))
}

/// An Epigenomics workflow of `c` chunks.
pub fn epigenomics(c: u32, rng: &mut impl Rng) -> Workflow {
    let mut b = Builder {
        rng,
        nodes: Vec::new(),
    };
    let split = b.add("fastqSplit", None, &[]);
    let maps: Vec<String> = (0..c)
        .map(|i| {
            let mut last = split.clone();
            for task in ["filterContams", "sol2sanger", "fastq2bfq", "map"] {
                last = b.add(task, Some(i), &[last]);
            }
            last
        })
        .collect();
    let merge = b.add("mapMerge", None, &maps);
    let index = b.add("maqIndex", None, &[merge]);
    b.add("pileup", None, &[index]);
    b.finish(format!("epigenomics-{c}"))
}

/// A fork-join of `k` workers.
pub fn fork_join(k: u32, rng: &mut impl Rng) -> Workflow {
    let mut b = Builder {
        rng,
        nodes: Vec::new(),
    };
    let fork = b.add("fork", None, &[]);
    let work: Vec<String> = (0..k)
        .map(|i| b.add("work", Some(i), std::slice::from_ref(&fork)))
        .collect();
    b.add("join", None, &work);
    b.finish(format!("fork-join-{k}"))
}

/// A chain of `m` stages.
pub fn chain(m: u32, rng: &mut impl Rng) -> Workflow {
    let mut b = Builder {
        rng,
        nodes: Vec::new(),
    };
    let mut last: Vec<String> = Vec::new();
    for i in 0..m {
        last = vec![b.add("stage", Some(i), &last)];
    }
    b.finish(format!("chain-{m}"))
}

/// A workflow of `shape`, its size drawn in [`size_range`].
pub fn generate(shape: Shape, rng: &mut impl Rng) -> Workflow {
    let (lo, hi) = size_range(shape);
    let size = rng.random_range(lo..=hi);
    match shape {
        Shape::Montage => montage(size, rng),
        Shape::Epigenomics => epigenomics(size, rng),
        Shape::ForkJoin => fork_join(size, rng),
        Shape::Chain => chain(size, rng),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// The task type of node `k` (its name before the number).
    fn task(wf: &Workflow, k: usize) -> &str {
        let name = &wf.nodes()[k].name;
        name.split('_').next().unwrap_or(name)
    }

    /// Per node, its level: 0 for an entry node, else one more than its deepest parent.
    fn levels(wf: &Workflow) -> Vec<usize> {
        let mut level = vec![0usize; wf.len()];
        // Parents come before their children in every generator's order.
        for k in 0..wf.len() {
            for &p in wf.parents(k) {
                assert!((p as usize) < k, "parents first");
                level[k] = level[k].max(level[p as usize] + 1);
            }
        }
        level
    }

    /// Nodes per level.
    fn widths(wf: &Workflow) -> Vec<usize> {
        let level = levels(wf);
        let mut w = vec![0; level.iter().max().map_or(0, |m| m + 1)];
        for l in level {
            w[l] += 1;
        }
        w
    }

    fn rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    /// 9 images tile 3 × 3: 6 horizontal and 6 vertical pairs; 10 images tile 4 wide
    /// (rows 4, 4, 2): 3 + 3 + 1 horizontal, 6 vertical.
    #[test]
    fn montage_pairs_by_hand() {
        assert_eq!(montage_pairs(9).len(), 12);
        assert_eq!(montage_pairs(10).len(), 13);
        assert!(!montage_pairs(10).contains(&(7, 8)), "7 ends a row");
        assert_eq!(montage_pairs(1), []);
        assert_eq!(montage_pairs(2), [(0, 1)]);
    }

    #[test]
    fn montage_has_its_levels_and_fans() {
        let wf = montage(9, &mut rng(1));
        // mProjectPP 9, mDiffFit 12, then one each, mBackground 9, then one each.
        assert_eq!(wf.len(), 2 * 9 + 12 + 6);
        assert_eq!(widths(&wf), [9, 12, 1, 1, 9, 1, 1, 1, 1]);
        let by_task = |t: &str| {
            (0..wf.len())
                .filter(|&k| task(&wf, k) == t)
                .collect::<Vec<_>>()
        };
        for k in by_task("mDiffFit") {
            assert_eq!(wf.parents(k).len(), 2);
            assert!(
                wf.parents(k)
                    .iter()
                    .all(|&p| task(&wf, p as usize) == "mProjectPP")
            );
        }
        let concat = by_task("mConcatFit")[0];
        assert_eq!(wf.parents(concat).len(), 12, "fan-in of every mDiffFit");
        let model = by_task("mBgModel")[0];
        assert_eq!(wf.children(model).len(), 9, "fan-out to every mBackground");
        for k in by_task("mBackground") {
            let ps: Vec<&str> = wf
                .parents(k)
                .iter()
                .map(|&p| task(&wf, p as usize))
                .collect();
            assert_eq!(ps, ["mBgModel", "mProjectPP"]);
        }
        assert_eq!(wf.parents(by_task("mImgtbl")[0]).len(), 9);
        let exits: Vec<&str> = (0..wf.len())
            .filter(|&k| wf.children(k).is_empty())
            .map(|k| task(&wf, k))
            .collect();
        assert_eq!(exits, ["mJPEG"]);
    }

    #[test]
    fn epigenomics_has_its_pipelines() {
        let wf = epigenomics(5, &mut rng(2));
        assert_eq!(wf.len(), 4 * 5 + 4);
        assert_eq!(widths(&wf), [1, 5, 5, 5, 5, 1, 1, 1]);
        assert_eq!(wf.children(0).len(), 5, "fastqSplit fans out");
        for k in 0..wf.len() {
            let t = task(&wf, k);
            if ["filterContams", "sol2sanger", "fastq2bfq", "map"].contains(&t) {
                assert_eq!(wf.parents(k).len(), 1, "{t}: a pipeline");
            }
        }
        let merge = (0..wf.len()).find(|&k| task(&wf, k) == "mapMerge").unwrap();
        assert!(
            wf.parents(merge)
                .iter()
                .all(|&p| task(&wf, p as usize) == "map")
        );
        assert_eq!(wf.parents(merge).len(), 5);
    }

    #[test]
    fn fork_join_and_chain() {
        let wf = fork_join(7, &mut rng(3));
        assert_eq!(widths(&wf), [1, 7, 1]);
        let wf = chain(6, &mut rng(4));
        assert_eq!(widths(&wf), [1; 6]);
    }

    /// One seed, one workflow; the draws stay in their ranges and estimates cover run times.
    #[test]
    fn generation_is_deterministic_per_seed() {
        for shape in Shape::ALL {
            let a = generate(shape, &mut rng(7));
            assert_eq!(a, generate(shape, &mut rng(7)), "{shape:?}");
            let (lo, hi) = size_range(shape);
            let size: u32 = a.name().rsplit('-').next().unwrap().parse().unwrap();
            assert!((lo..=hi).contains(&size));
            for (k, n) in a.nodes().iter().enumerate() {
                let m = mean_runtime(task(&a, k));
                let run = n.job.runtime.unwrap();
                assert!((m / 2..=m + m / 2).contains(&run), "{}", n.name);
                assert!(run <= n.job.estimate && n.job.estimate <= run + run / 2);
                assert_eq!((n.job.procs, n.job.benchmark), (1, Some(50)));
            }
            assert_eq!(Shape::parse(shape.name()), Some(shape));
        }
        let differ = (0..8).any(|s| {
            generate(Shape::Montage, &mut rng(s)) != generate(Shape::Montage, &mut rng(s + 1))
        });
        assert!(differ);
    }
}
