//! Fuzz entries of the meta-scheduler's parsers: arbitrary bytes as a `JobSpec` arriving at the
//! gRPC door (protobuf, as `Submit` receives it) and as the configuration file. Each must return,
//! never panic, whatever the bytes; what the door accepts must also hold up (within the limits,
//! and the grid's admission turns it into a valid job or refuses it naming a field). The unit
//! tests below run them on seeded mutants ([`gridsched_core::fuzz`]); `fuzz/` runs them under
//! `cargo fuzz`.

use crate::decide::Decider;
use crate::{MetaConfig, validate};
use gridsched_proto::v1;
use prost::Message;
use std::cell::RefCell;

/// The grid the door's fuzzing admits jobs to: licences, memory, estimate limits, a multi-node
/// site and urgent allowances, so that each of the admission's checks has something to refuse.
pub const GRID: &str = r#"
[limits]
max_estimate_s = 86400
[urgent]
allowance = { ann = "critical" }
[[sites]]
name = "alpha"
licences = ["matlab"]
max_estimate_s = 3600
machines = [
  { name = "a1", processors = 8, benchmark = 2, memory_kb = 1048576 },
  { name = "a2", processors = 8, benchmark = 2, memory_kb = 1048576 },
]
multi_node = true
[[sites]]
name = "beta"
licences = ["matlab", "ansys"]
machines = [{ name = "b1", processors = 4 }]
"#;

thread_local! {
    static DOOR: RefCell<(MetaConfig, Decider)> = RefCell::new({
        let cfg = MetaConfig::from_toml(GRID).expect("the fuzzing grid");
        let d = Decider::new(&cfg, 0).expect("the fuzzing grid");
        (cfg, d)
    });
}

/// A time inside the years the door takes deadlines in.
const NOW: i64 = 1_800_000_000;

/// `data` as a submitted `JobSpec`: decoded, checked at the door as `Submit` checks it, and, when
/// accepted, admitted by the grid runner of [`GRID`]. Returns whether the door accepted it.
pub fn job_spec(data: &[u8]) -> bool {
    let Ok(spec) = v1::JobSpec::decode(data) else {
        return false;
    };
    DOOR.with_borrow_mut(|(cfg, decider)| {
        let limits = &cfg.limits;
        if let Some(w) = &spec.workflow {
            if validate::check_workflow(&spec, limits).is_err() {
                return false;
            }
            for (i, n) in w.nodes.iter().enumerate() {
                let mut job = n.job.clone().expect("checked");
                job.user.clone_from(&spec.user);
                if let Ok(model) = decider.job(&job, 1 + i as u64, NOW) {
                    model.validate().unwrap_or_else(|e| panic!("{job:?}: {e}"));
                }
            }
            return true;
        }
        if validate::check(Some(&spec), limits).is_err() {
            return false;
        }
        assert!(
            spec.processors >= 1 && spec.estimate_s >= 1 && spec.owner_priority <= 3,
            "{spec:?}"
        );
        assert!(limits.check(&spec).is_ok(), "{spec:?}");
        let _ = cfg.urgent.refusal(&spec);
        match decider.admit(&spec, 1, NOW) {
            Ok(job) => {
                job.validate().unwrap_or_else(|e| panic!("{spec:?}: {e}"));
                assert_eq!(
                    (job.procs, job.estimate),
                    (spec.processors, spec.estimate_s),
                    "{spec:?}"
                );
            }
            Err(e) => assert!(
                e.field.as_deref().is_some_and(|f| !f.is_empty()) || !e.message.is_empty(),
                "a refusal says why: {e:?}"
            ),
        }
        true
    })
}

/// `data` as the meta-scheduler's configuration file: parsed and checked, and, when accepted,
/// turned into the grid runner the service starts with. Returns whether it was accepted.
pub fn config(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let Ok(cfg) = MetaConfig::from_toml(text) else {
        return false;
    };
    let _ = Decider::new(&cfg, 0);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsched_core::fuzz;

    /// Specs the door accepts, and a few it refuses, encoded as a client sends them.
    fn spec_seeds() -> Vec<Vec<u8>> {
        let base = v1::JobSpec {
            user: "ann".into(),
            processors: 4,
            estimate_s: 600,
            emulate_runtime_s: Some(5),
            ..Default::default()
        };
        let full = v1::JobSpec {
            user_class: v1::UserClass::Gold.into(),
            owner_priority: 2,
            memory_kb: Some(4096),
            deadline: Some(NOW + 3600),
            licences: vec!["matlab".into()],
            inputs: vec![v1::InputRef {
                machine: Some("a1".into()),
                size: 100,
            }],
            benchmark: Some(3),
            command: Some(v1::Command {
                program: "sh".into(),
                args: vec!["-c".into(), "echo $X".into()],
                env: [("X".to_string(), "1".to_string())].into(),
                working_directory: Some("/tmp".into()),
            }),
            emulate_runtime_s: None,
            client_token: Some("t-1".into()),
            urgency: v1::Urgency::High.into(),
            after: Some("afterok:3,afterany:4+60".into()),
            name: Some("nightly".into()),
            array: Some("0-15:4%2".into()),
            outputs: vec!["res/*.csv".into()],
            stage_in: vec![v1::StagedInput {
                name: "in.dat".into(),
                url: "https://data.example.invalid/in.dat".into(),
                ..Default::default()
            }],
            ..base.clone()
        };
        let wide = v1::JobSpec {
            processors: 16,
            partition: Some(0),
            reservation: Some(2),
            ..base.clone()
        };
        let node = |name: &str, parents: &[&str]| v1::WorkflowNode {
            name: name.into(),
            parents: parents.iter().map(|p| p.to_string()).collect(),
            retries: 1,
            job: Some(v1::JobSpec {
                user: String::new(),
                ..base.clone()
            }),
            ..Default::default()
        };
        let workflow = v1::JobSpec {
            workflow: Some(v1::Workflow {
                nodes: vec![node("a", &[]), node("b", &["a"])],
                resume: None,
            }),
            ..base.clone()
        };
        let refused = v1::JobSpec {
            licences: vec!["nope".into(), "nope".into()],
            ..base.clone()
        };
        [base, full, wide, workflow, refused]
            .iter()
            .map(Message::encode_to_vec)
            .collect()
    }

    #[test]
    fn the_seeds_reach_the_admission() {
        let seeds = spec_seeds();
        let accepted: Vec<bool> = seeds.iter().map(|s| job_spec(s)).collect();
        assert_eq!(accepted, [true, true, true, true, false]);
        assert!(!job_spec(b"\xff\xff\xff"), "not protobuf");
    }

    #[test]
    fn fuzz_the_doors_job_spec_checks() {
        let seeds = spec_seeds();
        let seeds: Vec<&[u8]> = seeds.iter().map(Vec::as_slice).collect();
        // Protobuf fields (tag, then a one-byte varint) and names.
        let words = [
            "\x08\x03", "\x18\x04", "\x20\x00", "\x28\x7f", "\x30\x01", "\x38\x00", "\x50\x00",
            "\x60\x7f", "\x78\x01", "\x01", "\x7f", "ann", "matlab", "a1",
        ];
        fuzz::run("job_spec", &seeds, &words, 150_000, job_spec).assert_reaches_past_the_syntax();
    }

    #[test]
    fn fuzz_the_configuration_file() {
        let seeds: &[&[u8]] = &[
            GRID.as_bytes(),
            b"listen = \"127.0.0.1:0\"\nstate_dir = \"/tmp/x\"\n[classifier]\nmax = 7\n\
              [dispatch]\nstrategy = \"min-completion\"\nsplit_wide = true\n\
              [dispatch.multi_site]\noverhead_pct = 10\n[links]\nstart_claims = false\n\
              [[sites]]\nname = \"a\"\nmachines = [{ name = \"m\", processors = 2 }]\n\
              [[sites]]\nname = \"b\"\nmachines = [{ name = \"n\", processors = 2 }]\n\
              [[wan]]\nsites = [\"a\", \"b\"]\noverhead_pct = 20\n\
              [network]\nsubmitters = { bandwidth = \"100 MB/s\", latency_ms = 20 }\n\
              [[network.links]]\nfrom = \"a\"\nto = \"b\"\nbandwidth = \"10 MB/s\"\n",
            b"[submit_rate]\nper_user = 2.5\nburst = 10\n[retention]\nevents = 5\n\
              [[sites]]\nname = \"a\"\nmax_estimate_s = 60\nmachines = [{ name = \"m\", processors = 2 }]\n",
        ];
        let words = [
            "[[sites]]\nname = \"",
            "machines = [{ name = \"m\", processors = ",
            "[classifier]\nmax = ",
            "[dispatch]\nstrategy = \"",
            "[limits]\n",
            "max_estimate_s = ",
            "processors = ",
            "benchmark = ",
            "memory_kb = ",
            "bandwidth = \"",
            " GB/s\"",
        ];
        fuzz::run("meta_config", seeds, &words, 100_000, config).assert_reaches_past_the_syntax();
    }
}
