//! Worked examples of dispatch that counts the transfers of a job's inputs: the strategies that
//! estimate completion add the time to move them over the grid's links, the grid remembers where
//! it sent them, and `explain` shows the estimate per site.

use super::tests::{on, runner};
use super::*;
use crate::dispatch::{DispatchKind, Link, Network};
use crate::model::{ArraySpec, DataIn};

const MB: u64 = 1_000_000;

/// Two sites of 1 processor: the submitters reach site 0 at 1 MB/s and site 1 at 100 MB/s;
/// the sites reach each other at 1 GB/s.
fn settings(blind: bool) -> GridSettings {
    let mut net = Network::uniform(
        2,
        Link {
            bytes_per_s: 100 * MB,
            latency_ms: 0,
        },
        Link {
            bytes_per_s: 1000 * MB,
            latency_ms: 0,
        },
    );
    net.submitters[0].bytes_per_s = MB;
    GridSettings {
        network: Some(net),
        data_blind: blind,
        explain: true,
        ..GridSettings::default()
    }
}

fn reading(id: u64, key: &str, bytes: u64) -> Job {
    let mut j = Job::new(id, 0, 1, 10, 10);
    j.stage_in = vec![DataIn::new(key, bytes)];
    j
}

fn placed(effects: &[Effect]) -> Vec<(u64, usize)> {
    (effects.iter())
        .filter_map(|e| match e {
            Effect::Place { job, site, .. } => Some((job.0, *site)),
            _ => None,
        })
        .collect()
}

fn submit(r: &mut GridRunner, now: Time, job: Job) -> Vec<Effect> {
    on(
        r,
        now,
        Input::Submit {
            job,
            priority: None,
        },
    )
}

#[test]
fn min_completion_sends_a_job_where_its_input_arrives_first_and_explains_the_transfers() {
    let mut aware = runner(DispatchKind::MinCompletion, &[1, 1], settings(false));
    let out = submit(&mut aware, 0, reading(1, "a", 100 * MB));
    assert_eq!(
        placed(&out),
        vec![(1, 1)],
        "1 s to site 1 against 100 s to site 0"
    );
    let x = out
        .iter()
        .find_map(|e| match e {
            Effect::Place { explanation, .. } => explanation.clone(),
            _ => None,
        })
        .expect("explained");
    let t: Vec<Option<(i64, u64)>> = (x.candidates.iter())
        .map(|c| c.transfer.map(|t| (t.seconds, t.bytes)))
        .collect();
    assert_eq!(t, vec![Some((100, 100 * MB)), Some((1, 100 * MB))]);
    assert!(
        x.decided_by.contains("estimated completion"),
        "{}",
        x.decided_by
    );

    // The data-blind baseline places it at the lowest id, and still explains the transfer.
    let mut blind = runner(DispatchKind::MinCompletion, &[1, 1], settings(true));
    let out = submit(&mut blind, 0, reading(1, "a", 100 * MB));
    assert_eq!(placed(&out), vec![(1, 0)]);
}

#[test]
fn a_site_that_holds_an_input_moves_nothing_and_is_a_source_for_the_others() {
    let mut r = runner(DispatchKind::MinCompletion, &[1, 1], settings(false));
    assert_eq!(
        placed(&submit(&mut r, 0, reading(1, "a", 100 * MB))),
        vec![(1, 1)]
    );
    let t = &r.placer().grid().transfers;
    assert_eq!(
        t.held_at(ClusterId(1), "a"),
        Some(1),
        "there 1 s after the dispatch"
    );
    assert_eq!(t.held_at(ClusterId(0), "a"), None);
    let j = reading(2, "a", 100 * MB);
    assert_eq!(t.estimate(&j, ClusterId(1), 5), Default::default());
    // Site 0 would get it from site 1 at 1 GB/s (0.1 s, a second), not from the submitters.
    let m = t.best_move(&j.stage_in[0], ClusterId(0), 5).unwrap();
    assert_eq!((m.from, m.seconds), (Some(ClusterId(1)), 1));
}

#[test]
fn a_batch_mapper_counts_an_input_once_per_site_in_its_pass() {
    // Min-Min over an array of 4 tasks reading one 1 GB input (10 s each): the input takes
    // 1000 s to reach site 0 and 10 s to reach site 1. Counted once per site (the first task
    // moves it, the others find it on its way there), the tasks queue at site 1 (completions 20,
    // 30, 40, 50), long before it could reach site 0; data-blind, the mapper spreads them.
    let array = |id| {
        let mut j = reading(id, "big", 1000 * MB);
        j.array = Some(Box::new(ArraySpec::parse("0-3", 100).unwrap()));
        j
    };
    let mut aware = runner(DispatchKind::MinMin, &[1, 1], settings(false));
    submit(&mut aware, 0, array(10));
    let out = on(&mut aware, 0, Input::Release);
    let sites: Vec<usize> = placed(&out).iter().map(|p| p.1).collect();
    assert_eq!(sites, vec![1, 1, 1, 1], "{out:?}");
    let mut blind = runner(DispatchKind::MinMin, &[1, 1], settings(true));
    submit(&mut blind, 0, array(10));
    let out = on(&mut blind, 0, Input::Release);
    let mut sites: Vec<usize> = placed(&out).iter().map(|p| p.1).collect();
    sites.sort_unstable();
    assert_eq!(
        sites,
        vec![0, 0, 1, 1],
        "data-blind Min-Min spreads the tasks"
    );
}

#[test]
fn heft_searches_a_start_from_when_the_inputs_are_in() {
    for (blind, site) in [(false, 1), (true, 0)] {
        let mut r = runner(DispatchKind::Heft, &[1, 1], settings(blind));
        submit(&mut r, 0, reading(1, "a", 100 * MB));
        assert_eq!(placed(&on(&mut r, 0, Input::Release)), vec![(1, site)]);
    }
}

#[test]
fn a_restored_placement_tells_the_grid_where_the_inputs_lie() {
    let mut r = runner(DispatchKind::MinCompletion, &[1, 1], settings(false));
    let job = reading(1, "a", 100 * MB);
    on(
        &mut r,
        0,
        Input::Restore {
            job,
            priority: 1,
            at: Restored::Site {
                site: 0,
                claimed: true,
                since: 0,
            },
        },
    );
    assert_eq!(
        r.placer().grid().transfers.held_at(ClusterId(0), "a"),
        Some(0)
    );
    // The next reader goes to site 0, which holds the input.
    assert_eq!(
        placed(&submit(&mut r, 1, reading(2, "a", 100 * MB))),
        vec![(2, 0)]
    );
}

/// Job `job` completed at `site`, exit 0.
fn completed_at(job: u64, site: usize) -> Input {
    Input::Ended {
        job: JobId(job),
        site,
        outcome: crate::model::Outcome::Completed,
        exit: Some(0),
    }
}

#[test]
fn a_workflow_node_reads_its_parents_outputs_from_where_they_ran() {
    use crate::model::{DataOut, Workflow, WorkflowText};
    let node = |name: &str, parents: &[&str], outputs: &[(&str, u64)]| {
        let mut n = crate::model::workflow::tests::node(name, parents);
        n.job = Job::new(0, 0, 1, 10, 10);
        n.outputs = (outputs.iter())
            .map(|&(name, bytes)| DataOut {
                name: name.into(),
                bytes,
            })
            .collect();
        n
    };
    let wf = Workflow::new(WorkflowText {
        name: "w".into(),
        nodes: vec![
            node("a", &[], &[("out.dat", 100 * MB), ("log", 1)]),
            node("b", &["a"], &[]),
        ],
    })
    .unwrap();
    let mut r = runner(DispatchKind::MinCompletion, &[1, 1], settings(false));
    let submit = Input::SubmitWorkflow {
        id: JobId(100),
        workflow: Box::new(wf),
    };
    assert_eq!(
        placed(&on(&mut r, 0, submit)),
        vec![(101, 0)],
        "a: lowest id"
    );
    let ended = completed_at(101, 0);
    // b reads a's outputs at site 0, where a ran: there it moves nothing; at site 1, 1 s.
    assert_eq!(placed(&on(&mut r, 20, ended)), vec![(102, 0)]);
    let (b, _) = r.job(JobId(102)).expect("b is out");
    let want = |name: &str, bytes| DataIn {
        key: format!("100/a/{name}"),
        bytes,
        at: vec![ClusterId(0)],
    };
    assert_eq!(b.stage_in, vec![want("out.dat", 100 * MB), want("log", 1)]);
    let t = &r.placer().grid().transfers;
    assert_eq!(t.estimate(b, ClusterId(0), 20), Default::default());
    assert_eq!(
        t.estimate(b, ClusterId(1), 20).seconds,
        2,
        "0.1 s + 1 ms, each a second"
    );

    // Two outputs of one name are refused, naming them.
    let twice = Workflow::new(WorkflowText {
        name: "w".into(),
        nodes: vec![node("a", &[], &[("x", 1), ("x", 2)])],
    });
    assert!(twice.unwrap_err().to_string().contains("output `x`"));
}

#[test]
fn the_outputs_a_site_reports_replace_the_declared_ones() {
    use crate::model::{DataOut, Workflow, WorkflowText};
    let node = |name: &str, parents: &[&str], declared: u64| {
        let mut n = crate::model::workflow::tests::node(name, parents);
        n.job = Job::new(0, 0, 1, 10, 10);
        n.outputs = (declared > 0)
            .then(|| DataOut {
                name: "guess".into(),
                bytes: declared,
            })
            .into_iter()
            .collect();
        n
    };
    let wf = Workflow::new(WorkflowText {
        name: "w".into(),
        nodes: vec![node("a", &[], 5), node("b", &["a"], 0)],
    })
    .unwrap();
    let mut r = runner(DispatchKind::MinCompletion, &[1, 1], settings(false));
    let submit = Input::SubmitWorkflow {
        id: JobId(100),
        workflow: Box::new(wf),
    };
    assert_eq!(placed(&on(&mut r, 0, submit)), vec![(101, 0)]);
    // The live meta-scheduler reports what a's site kept (globs matched at run time).
    let files = vec![
        DataOut {
            name: "out/1.csv".into(),
            bytes: 30 * MB,
        },
        DataOut {
            name: "out/2.csv".into(),
            bytes: 0,
        },
    ];
    on(
        &mut r,
        20,
        Input::Outputs {
            job: JobId(101),
            files,
        },
    );
    let ended = completed_at(101, 0);
    assert_eq!(placed(&on(&mut r, 20, ended)), vec![(102, 0)]);
    let (b, _) = r.job(JobId(102)).expect("b is out");
    let keys: Vec<(&str, u64)> = b
        .stage_in
        .iter()
        .map(|d| (d.key.as_str(), d.bytes))
        .collect();
    assert_eq!(
        keys,
        vec![("100/a/out/1.csv", 30 * MB), ("100/a/out/2.csv", 0)]
    );
    assert!(b.stage_in.iter().all(|d| d.at == vec![ClusterId(0)]));
    // A job not in a workflow reports outputs that nobody reads: nothing kept.
    on(
        &mut r,
        30,
        Input::Outputs {
            job: JobId(7),
            files: Vec::new(),
        },
    );
}

#[test]
fn a_job_with_inputs_goes_only_to_sites_that_stage_them() {
    use crate::dispatch::DispatchConfig;
    let mut sites: Vec<SiteSpec> = (0..2).map(|i| super::tests::site(i, 4)).collect();
    sites[0].stages = false;
    let cfg = |sites: Vec<SiteSpec>| GridConfig {
        sites,
        dispatch: DispatchConfig::new(DispatchKind::LoadOrdering),
        classifier: None,
        settings: GridSettings {
            explain: true,
            ..GridSettings::default()
        },
        classifier_state: None,
        usage_state: None,
    };
    let mut r = GridRunner::from_config(&cfg(sites.clone())).unwrap();
    // Load-Ordering's idle site 0 for a job without inputs, site 1 for one with.
    assert_eq!(
        placed(&submit(&mut r, 0, Job::new(1, 0, 1, 10, 10))),
        vec![(1, 0)]
    );
    let out = submit(&mut r, 0, reading(2, "a", 1));
    assert_eq!(placed(&out), vec![(2, 1)]);
    let x = out
        .iter()
        .find_map(|e| match e {
            Effect::Place { explanation, .. } => explanation.clone(),
            _ => None,
        })
        .unwrap();
    assert!(
        x.candidates[0].note.contains("does not stage inputs"),
        "{:?}",
        x.candidates[0]
    );
    // With no site that stages, a job with inputs is refused at the door, naming the field.
    sites[1].stages = false;
    let r = GridRunner::from_config(&cfg(sites)).unwrap();
    let refusal = r.admit(0, &reading(3, "a", 1)).unwrap_err();
    assert_eq!(refusal.field, Field::StageIn);
    assert!(refusal.why.contains("stages inputs"), "{}", refusal.why);
    assert!(r.admit(0, &Job::new(4, 0, 1, 10, 10)).is_ok());
}
