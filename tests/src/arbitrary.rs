//! Random `JobSpec`s for the admission tests: mostly hostile input (NUL bytes, text of 10,000
//! characters, estimates of 0, negative or 2^62 seconds, unknown licences, absurd processor
//! counts) mixed with plausible values, so that some specs are accepted. A real command is always
//! harmless (`true`, `echo`, or a program that does not exist).

use gridsched_proto::v1;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;

/// Text: a short name, any short string, one holding a NUL byte, or a huge one.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        16 => "[a-z]{1,8}",
        1 => ".{0,12}",
        1 => "[a-z]{0,4}\0[a-z]{0,4}",
        1 => (200usize..12_000).prop_map(|n| "x".repeat(n)),
    ]
}

/// Seconds: plausible ones and the edges (0, negative, 2^62, `i64` extremes).
pub fn seconds() -> impl Strategy<Value = i64> {
    prop_oneof![
        24 => 1i64..30,
        1 => Just(0i64),
        1 => -1_000i64..0,
        1 => Just(1i64 << 62),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        1 => any::<i64>(),
        1 => 3_000i64..100_000_000,
    ]
}

/// A command: a harmless program, with random arguments, environment and directory.
pub fn command() -> impl Strategy<Value = v1::Command> {
    let program = prop_oneof![
        3 => Just("true".to_owned()),
        2 => Just("echo".to_owned()),
        1 => text(),
    ];
    let args = prop_oneof![
        12 => vec(text(), 0..4),
        1 => vec(Just("a".repeat(1000)), 100..200),
        1 => vec(Just(String::new()), 4_000..4_200),
    ];
    let env = btree_map(prop_oneof![12 => "[A-Z]{1,6}", 1 => text()], text(), 0..3);
    (program, args, env, proptest::option::of(text())).prop_map(|(program, args, env, dir)| {
        v1::Command {
            program,
            args,
            env: env.into_iter().collect(),
            working_directory: dir,
        }
    })
}

/// A whole spec, over the licences `licences` and the machine names `machines` of a grid (plus
/// unknown ones), around the time `now`.
pub fn job_spec(
    licences: Vec<String>,
    machines: Vec<String>,
    now: i64,
) -> impl Strategy<Value = v1::JobSpec> {
    let licence = prop_oneof![12 => proptest::sample::select(licences), 1 => text()];
    let machine = prop_oneof![12 => proptest::sample::select(machines), 1 => text()];
    let input = (proptest::option::of(machine), any::<u64>())
        .prop_map(|(machine, size)| v1::InputRef { machine, size });
    let what = prop_oneof![
        8 => seconds().prop_map(|r| (None, Some(r))),
        4 => command().prop_map(|c| (Some(c), None)),
        1 => (command(), seconds()).prop_map(|(c, r)| (Some(c), Some(r))),
        1 => Just((None, None)),
    ];
    let processors = prop_oneof![16 => 1u32..6, 1 => Just(0u32), 1 => any::<u32>()];
    let deadline = prop_oneof![
        12 => Just(None),
        2 => (0i64..100_000).prop_map(move |d| Some(now + d)),
        1 => any::<i64>().prop_map(Some),
    ];
    let small = (
        prop_oneof![20 => 0u32..4, 1 => any::<u32>()],
        prop_oneof![20 => 0i32..4, 1 => any::<i32>()],
        proptest::option::of(prop_oneof![8 => 1u32..3, 1 => Just(0u32), 1 => any::<u32>()]),
        proptest::option::of(prop_oneof![4 => 1u64..4_000_000, 1 => any::<u64>()]),
        proptest::option::of(text()),
        proptest::option::of(any::<u32>()),
    );
    (
        text(),
        processors,
        seconds(),
        deadline,
        vec(licence, 0..2),
        vec(input, 0..2),
        what,
        small,
    )
        .prop_map(
            |(user, processors, estimate_s, deadline, licences, inputs, what, small)| {
                let (owner_priority, user_class, benchmark, memory_kb, client_token, partition) =
                    small;
                v1::JobSpec {
                    user,
                    user_class,
                    owner_priority,
                    processors,
                    memory_kb,
                    estimate_s,
                    deadline,
                    licences,
                    inputs,
                    benchmark,
                    command: what.0,
                    emulate_runtime_s: what.1,
                    client_token,
                    partition,
                    // Reservations are checked against state, not form: see
                    // tests/tests/live_reservations.rs.
                    reservation: None,
                    // Urgency is checked against the user's allowance: see
                    // tests/tests/live_urgent.rs.
                    urgency: 0,
                    // Dependencies name jobs of the grid: see the dependency table's live test.
                    after: None,
                    // Arrays: see the live array tests.
                    array: None,
                    name: None,
                    // Workflows: see the live workflow test.
                    workflow: None,
                    // Declared outputs: see the door's test in meta-scheduler/src/validate.rs.
                    outputs: Vec::new(),
                    stage_in: Vec::new(),
                }
            },
        )
}
