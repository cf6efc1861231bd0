//! The command-line knobs of a replay: workload normalisation, policy options and engine options.
//! Every knob of `reference-semantics.md` is here; all default to the reference (`pyss`) mode.

use clap::{Args, ValueEnum};
use gridsched_core::policy::{
    BackfillOptions, DeciderKind, DynpOptions, PlanOrder, PlanningOptions, PlanningRules,
    PolicyConfig, PolicyKind, Rule, ShadowCmp, ShadowMode, SubmitPass, Tuning, TuningMetric,
};
use gridsched_workload::{
    Estimates, NormalizeMode, NormalizeOptions, ProcsField, RuntimeLimit, WideJobs,
};
use gridsim::{Batching, EngineOptions};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// The reference simulator's rules (problematic jobs kept as 1 s jobs).
    Pyss,
    /// Streit's pre-processing: bad jobs dropped.
    Streit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProcsFieldArg {
    /// Field 5, allocated processors.
    Allocated,
    /// Field 8, requested processors.
    Requested,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShadowArg {
    Fresh,
    Stale,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShadowCmpArg {
    /// A backfilled job may end exactly at the shadow time.
    AtOrBefore,
    /// It must end strictly before.
    Before,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SubmitPassArg {
    Always,
    IfFits,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BatchingArg {
    PerEvent,
    PerTimestamp,
}

/// Knobs shared by `run` and `bench`.
#[derive(Clone, Debug, Args)]
pub struct Knobs {
    #[arg(
        long,
        default_value = "easy",
        value_parser = PolicyKind::parse_single,
        help = format!("Scheduling policy: {}", PolicyKind::names(&PolicyKind::single_machine())),
        long_help = format!(
            "Scheduling policy:\n{}",
            PolicyKind::help_lines(&PolicyKind::single_machine())
        )
    )]
    pub policy: PolicyKind,

    /// Normalisation rules for SWF input.
    #[arg(long, value_enum, default_value = "pyss", help_heading = "Workload")]
    pub mode: ModeArg,
    /// Which SWF field gives a job's width.
    #[arg(
        long,
        value_enum,
        default_value = "allocated",
        help_heading = "Workload"
    )]
    pub procs_field: ProcsFieldArg,
    /// Estimates: `requested` (field 9), `perfect` (the actual run time) or a factor `F` (actual × F).
    #[arg(long, default_value = "requested", value_parser = parse_estimates, help_heading = "Workload")]
    pub estimates: EstimatesArg,
    /// Drop jobs wider than the machine instead of capping their width.
    #[arg(long, help_heading = "Workload")]
    pub reject_wide: bool,
    /// Processors per node: widths are rounded up to whole nodes (SDSC-BLUE: 8).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..), help_heading = "Workload")]
    pub node_size: u32,
    /// Let jobs run past their estimate instead of killing them at it (the policy is told when
    /// a job overruns).
    #[arg(long, help_heading = "Workload")]
    pub run_to_completion: bool,
    /// Multiply submission times (from the first job) by this factor (< 1 raises the load).
    #[arg(long, value_parser = parse_factor, help_heading = "Workload")]
    pub shrink: Option<f64>,

    /// EASY head reservation: recomputed every pass (fresh) or kept from when the head blocked.
    #[arg(
        long,
        value_enum,
        default_value = "fresh",
        help_heading = "Backfilling"
    )]
    pub shadow: ShadowArg,
    /// Whether a backfilled job may end exactly at the shadow time.
    #[arg(
        long,
        value_enum,
        default_value = "at-or-before",
        help_heading = "Backfilling"
    )]
    pub shadow_cmp: ShadowCmpArg,
    /// Only backfill jobs that end by the shadow time (no extra-processors rule).
    #[arg(long, help_heading = "Backfilling")]
    pub no_extra_procs: bool,
    /// Whether every submission runs a pass, or only one whose job fits now.
    #[arg(
        long,
        value_enum,
        default_value = "always",
        help_heading = "Backfilling"
    )]
    pub submit_pass: SubmitPassArg,

    /// Planning policies and dynP: plan every job no earlier than the one before it in the
    /// policy's order (the thesis' "backfilling disabled").
    #[arg(long, help_heading = "Planning and dynP")]
    pub no_plan_backfilling: bool,
    /// Planning policies and dynP: a time-dependent constraint on when jobs may start
    /// (repeatable, at most 6), e.g. `width-cap 75% mon-fri 06-20`, `wide-only 67% sat-sun 00-24`,
    /// `long-only 172800 sat-sun 00-24`, `user-cap 50% mon-fri 06-20` (Streit §3.1.2; trace
    /// times as Unix seconds).
    #[arg(long = "plan-rule", help_heading = "Planning and dynP")]
    pub plan_rule: Vec<Rule>,
    /// Hours added to UTC for the windows of `--plan-rule`.
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        help_heading = "Planning and dynP"
    )]
    pub plan_utc_offset: i8,
    /// dynP's self-tuning metric: art, artwa, artww, makespan, sld, sldww, ppsld60.
    #[arg(long, default_value = "artww", help_heading = "Planning and dynP")]
    pub dynp_metric: TuningMetric,
    /// dynP's decider: simple, advanced, preferred.
    #[arg(long, default_value = "advanced", help_heading = "Planning and dynP")]
    pub dynp_decider: DeciderKind,
    /// The preferred decider's policy: fcfs, sjf, ljf.
    #[arg(long, default_value = "sjf", help_heading = "Planning and dynP")]
    pub dynp_preferred: PlanOrder,
    /// The preferred decider's literal reading (back to the preferred policy when it is at
    /// least equal to the active one, even if the third is better).
    #[arg(long, help_heading = "Planning and dynP")]
    pub dynp_preferred_literal: bool,
    /// Half self-tuning: decide at submissions only.
    #[arg(long, help_heading = "Planning and dynP")]
    pub dynp_half: bool,
    /// Slackness in percent: the active policy's value is virtually improved by it.
    #[arg(long, default_value_t = 0.0, value_parser = parse_slack, help_heading = "Planning and dynP")]
    pub dynp_slack: f64,

    /// A policy option by its configuration key (repeatable; the keys of a local scheduler's
    /// `[policy]` table), e.g. `--set backfill.shadow=stale`, `--set planning.backfilling=false`,
    /// `--set dynp.slack_pct=5`; applied after the flags above.
    #[arg(
        long = "set",
        value_name = "KEY=VALUE",
        help_heading = "Policy options",
        long_help = format!(
            "A policy option by its configuration key (repeatable; the keys of a local \
             scheduler's [policy] table), applied after the flags above. The keys each policy \
             takes:\n{}",
            option_keys(
                &PolicyKind::single_machine(),
                &NOT_IN_A_REPLAY.map(|(key, _)| key)
            )
        )
    )]
    pub set: Vec<String>,

    /// Run a pass after every event (reference) or once per time stamp.
    #[arg(long, value_enum, default_value = "per-event", help_heading = "Engine")]
    pub batching: BatchingArg,
    /// With --run-to-completion: how far an overrunning job's predicted end moves each time it
    /// is reached, in seconds (default: one more estimate).
    #[arg(long, help_heading = "Engine")]
    pub overrun_extension: Option<i64>,
}

/// The top-level `[policy]` keys a replay refuses, with why: it runs one space-shared machine
/// and no urgent layer.
const NOT_IN_A_REPLAY: [(&str, &str); 2] = [
    (
        "partition",
        "a replay runs one space-shared machine, never a partition of nodes (gridsim cluster and \
         a local scheduler's [policy] table take it)",
    ),
    (
        "urgent",
        "a replay runs no urgent layer (gridsim cluster and `gridsim experiment urgent` do)",
    ),
];

/// One line per kind: the keys of `--set` it takes (derived from the options' types), leaving
/// out the top-level keys in `left_out`.
pub fn option_keys(kinds: &[PolicyKind], left_out: &[&str]) -> String {
    kinds
        .iter()
        .map(|&k| {
            let keys: Vec<String> = PolicyConfig::keys(k)
                .into_iter()
                .filter(|key| !left_out.contains(&key.split('.').next().unwrap_or_default()))
                .collect();
            let keys = match keys.is_empty() {
                true => "(none)".to_string(),
                false => keys.join(", "),
            };
            format!("{:<13} {keys}", k.as_str())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Parsed `--estimates`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EstimatesArg {
    Requested,
    Perfect,
    Multiple(f64),
}

fn parse_estimates(s: &str) -> Result<EstimatesArg, String> {
    match s {
        "requested" => Ok(EstimatesArg::Requested),
        "perfect" => Ok(EstimatesArg::Perfect),
        f => match f.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 1.0 => Ok(EstimatesArg::Multiple(x)),
            _ => Err(format!(
                "expected `requested`, `perfect` or a factor >= 1, got `{f}`"
            )),
        },
    }
}

fn parse_slack(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..100.0).contains(&x) => Ok(x),
        _ => Err(format!("expected a percentage in [0, 100), got `{s}`")),
    }
}

fn parse_factor(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("expected a positive factor, got `{s}`")),
    }
}

impl Knobs {
    /// The normalisation options these knobs select.
    pub fn normalize(&self) -> NormalizeOptions {
        NormalizeOptions {
            mode: match self.mode {
                ModeArg::Pyss => NormalizeMode::Pyss,
                ModeArg::Streit => NormalizeMode::Streit,
            },
            procs_field: match self.procs_field {
                ProcsFieldArg::Allocated => ProcsField::Allocated,
                ProcsFieldArg::Requested => ProcsField::Requested,
            },
            runtime_limit: if self.run_to_completion {
                RuntimeLimit::RunToCompletion
            } else {
                RuntimeLimit::KillAtEstimate
            },
            estimates: match self.estimates {
                EstimatesArg::Requested => Estimates::Requested,
                EstimatesArg::Perfect => Estimates::Perfect,
                EstimatesArg::Multiple(f) => Estimates::Multiple(f),
            },
            wide_jobs: if self.reject_wide {
                WideJobs::Reject
            } else {
                WideJobs::Cap
            },
            node_size: self.node_size,
            // A single-machine replay runs no grid runner, which decides dependencies.
            dependencies: false,
        }
    }

    /// The planning rules of `--plan-rule`, or why they cannot be taken.
    pub fn rules(&self) -> anyhow::Result<PlanningRules> {
        let texts: Vec<String> = self.plan_rule.iter().map(Rule::to_string).collect();
        let mut r =
            PlanningRules::from_texts(&texts).map_err(|e| anyhow::anyhow!("--plan-rule: {e}"))?;
        r.utc_offset_h = self.plan_utc_offset;
        Ok(r)
    }

    /// The policy configuration these knobs select, checked against the policy: the flags, then
    /// every `--set` in order.
    pub fn policy(&self) -> anyhow::Result<PolicyConfig> {
        let mut c = self.flags_policy();
        for a in &self.set {
            let top = a.split(['=', '.']).next().unwrap_or_default().trim();
            if let Some((key, why)) = NOT_IN_A_REPLAY.iter().find(|(key, _)| *key == top) {
                anyhow::bail!("--set {key}: {why}");
            }
            c.set(a).map_err(|e| anyhow::anyhow!("--set {e}"))?;
        }
        c.check()?;
        Ok(c)
    }

    fn flags_policy(&self) -> PolicyConfig {
        PolicyConfig {
            policy: self.policy,
            partition: true,
            urgent: None,
            heuristics: Default::default(),
            cs: Default::default(),
            matching: None,
            planning: PlanningOptions {
                backfilling: !self.no_plan_backfilling,
                rules: self.rules().unwrap_or_default(),
            },
            gang: Default::default(),
            dynp: DynpOptions {
                metric: self.dynp_metric,
                decider: self.dynp_decider,
                preferred: self.dynp_preferred,
                preferred_literal: self.dynp_preferred_literal,
                tuning: if self.dynp_half {
                    Tuning::Half
                } else {
                    Tuning::Full
                },
                slack_pct: self.dynp_slack,
            },
            backfill: BackfillOptions {
                shadow: match self.shadow {
                    ShadowArg::Fresh => ShadowMode::Fresh,
                    ShadowArg::Stale => ShadowMode::Stale,
                },
                shadow_cmp: match self.shadow_cmp {
                    ShadowCmpArg::AtOrBefore => ShadowCmp::AtOrBefore,
                    ShadowCmpArg::Before => ShadowCmp::Before,
                },
                extra_procs: !self.no_extra_procs,
                submit_pass: match self.submit_pass {
                    SubmitPassArg::Always => SubmitPass::Always,
                    SubmitPassArg::IfFits => SubmitPass::IfFits,
                },
            },
        }
    }

    /// The engine options these knobs select.
    pub fn engine(&self) -> EngineOptions {
        EngineOptions {
            batching: match self.batching {
                BatchingArg::PerEvent => Batching::PerEvent,
                BatchingArg::PerTimestamp => Batching::PerTimestamp,
            },
            kill_at_estimate: !self.run_to_completion,
            overrun_extension: self.overrun_extension,
        }
    }

    /// The knobs that differ from the reference mode, as words for reports.
    pub fn non_reference(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.mode != ModeArg::Pyss {
            v.push("mode=streit".into());
        }
        if self.procs_field != ProcsFieldArg::Allocated {
            v.push("procs-field=requested".into());
        }
        match self.estimates {
            EstimatesArg::Requested => {}
            EstimatesArg::Perfect => v.push("estimates=perfect".into()),
            EstimatesArg::Multiple(f) => v.push(format!("estimates=actual*{f}")),
        }
        if self.reject_wide {
            v.push("reject-wide".into());
        }
        if self.node_size != 1 {
            v.push(format!("node-size={}", self.node_size));
        }
        if self.run_to_completion {
            v.push("run-to-completion".into());
        }
        if let Some(f) = self.shrink {
            v.push(format!("shrink={f}"));
        }
        let p = self.policy().unwrap_or_else(|_| self.flags_policy());
        v.extend(p.backfill.non_default());
        if self.batching != BatchingArg::PerEvent {
            v.push("batching=per-timestamp".into());
        }
        if let Some(x) = self.overrun_extension {
            v.push(format!("overrun-extension={x}s"));
        }
        v
    }
}
