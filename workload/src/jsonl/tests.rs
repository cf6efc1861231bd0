use super::*;

fn read(text: &str) -> (Vec<Result<Job, WorkloadError>>, Vec<String>) {
    let mut r = JsonlReader::from_reader(text.as_bytes(), "jobs.jsonl");
    let v: Vec<_> = r.by_ref().collect();
    (v, r.licence_names().to_vec())
}

fn err_of(line: &str) -> String {
    let (v, _) = read(line);
    assert_eq!(v.len(), 1);
    v.into_iter().next().unwrap().unwrap_err().to_string()
}

#[test]
fn reads_all_fields_and_interns_licences() {
    let text = r#"# a comment

{"id":1,"submit":0,"procs":4,"estimate":3600,"runtime":1800}
   # indented comment
{"id":2,"submit":60,"procs":1,"estimate":600,"user":7,"class":"gold","owner_priority":3,"deadline":7200,"licences":["matlab","fluent"],"memory_kb":2048,"inputs":[{"machine":3,"size":500},{"size":100}],"benchmark":250,"partition":4}
{"id":3,"submit":61,"procs":2,"estimate":10,"licences":["fluent"]}
"#;
    let (v, names) = read(text);
    let jobs: Vec<Job> = v.into_iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(jobs.len(), 3);
    let mut a = Job::new(1, 0, 4, 3600, 1800);
    assert_eq!(jobs[0], a);
    a = Job::new(2, 60, 1, 600, 0);
    a.runtime = None;
    a.user = UserId(7);
    a.user_class = UserClass::Gold;
    a.owner_priority = 3;
    a.deadline = Some(7200);
    a.licences = vec![LicenceId(0), LicenceId(1)];
    a.memory_kb = Some(2048);
    a.inputs = vec![
        InputRef {
            machine: Some(MachineId(3)),
            size: 500,
        },
        InputRef {
            machine: None,
            size: 100,
        },
    ];
    a.benchmark = Some(250);
    a.partition = Some(4);
    assert_eq!(jobs[1], a);
    assert_eq!(jobs[2].licences, vec![LicenceId(1)]);
    assert_eq!(names, vec!["matlab".to_owned(), "fluent".to_owned()]);
}

#[test]
fn round_trip_through_the_writer() {
    let text = r#"{"id":1,"submit":0,"procs":4,"estimate":3600,"runtime":1800}
{"id":2,"submit":60,"procs":1,"estimate":600,"user":7,"class":"silver","owner_priority":2,"deadline":7200,"licences":["b","a"],"memory_kb":2048,"inputs":[{"machine":3,"size":500},{"size":100}],"benchmark":250,"partition":4}
{"id":3,"submit":61,"procs":2,"estimate":10,"licences":["a"]}
{"id":4,"submit":62,"procs":1,"estimate":10,"after":"afterok:1,afterany:2+60,singleton","name":"nightly"}
"#;
    let (v, names) = read(text);
    let jobs: Vec<Job> = v.into_iter().collect::<Result<_, _>>().unwrap();
    let after = jobs[3].after.as_deref().unwrap();
    assert_eq!(
        (
            after.terms.len(),
            after.terms[1].delay,
            after.singleton.as_deref()
        ),
        (2, 60, Some("nightly"))
    );
    let mut w = JsonlWriter::new(Vec::new(), names.clone());
    w.write_comment("written by a test\nsecond line").unwrap();
    for j in &jobs {
        w.write_job(j).unwrap();
    }
    let out = String::from_utf8(w.into_inner()).unwrap();
    assert!(out.starts_with("# written by a test second line\n"));
    // The writer leaves out defaults and keeps key order, so the job lines come back verbatim.
    assert_eq!(
        out.lines().skip(1).collect::<Vec<_>>(),
        text.lines().collect::<Vec<_>>()
    );
    let (again, names2) = read(&out);
    let again: Vec<Job> = again.into_iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(again, jobs);
    assert_eq!(names2, names);
}

#[test]
fn a_bad_dependency_is_refused_naming_the_line_and_field() {
    let e = err_of(
        r#"{"id":5,"submit":0,"procs":1,"estimate":10,"after":"afterok:1?after:2,after:3"}"#,
    );
    assert!(e.starts_with("jobs.jsonl:1: field `after`: "), "{e}");
    assert!(e.contains("cannot be mixed"), "{e}");
    let e = err_of(r#"{"id":5,"submit":0,"procs":1,"estimate":10,"after":"afterok:5"}"#);
    assert!(e.contains("job 5 cannot wait for itself"), "{e}");
}

#[test]
fn writer_refuses_unnamed_licences() {
    let mut j = Job::new(1, 0, 1, 10, 5);
    j.licences = vec![LicenceId(2)];
    let mut w = JsonlWriter::new(Vec::new(), vec!["x".into()]);
    let e = w.write_job(&j).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("lic2"), "{e}");
}

#[test]
fn errors_name_line_and_field_path() {
    let text = "{\"id\":1,\"submit\":0,\"procs\":4,\"estimate\":10}\n\n{\"id\":2,\"submit\":0,\"procs\":\"four\",\"estimate\":10}\n";
    let (v, _) = read(text);
    assert!(v[0].is_ok());
    assert_eq!(
        v[1].as_ref().unwrap_err().to_string(),
        "jobs.jsonl:3: field `procs`: invalid type: string \"four\", expected u32"
    );
    let e =
        err_of(r#"{"id":1,"submit":0,"procs":4,"estimate":10,"inputs":[{"size":1},{"size":-1}]}"#);
    assert!(
        e.starts_with("jobs.jsonl:1: field `inputs[1].size`: invalid value"),
        "{e}"
    );
    let e = err_of(r#"{"id":1,"submit":0,"procs":4,"estimate":10,"colour":"red"}"#);
    assert!(e.contains("unknown field `colour`"), "{e}");
    assert!(e.starts_with("jobs.jsonl:1: "), "{e}");
    let e = err_of(r#"{"id":1,"submit":0,"estimate":10}"#);
    assert_eq!(e, "jobs.jsonl:1: missing field `procs`");
    let e = err_of(r#"{"id":1,"submit":0,"procs":4,"estimate":10,"class":"platinum"}"#);
    assert!(
        e.starts_with("jobs.jsonl:1: field `class`: unknown variant `platinum`"),
        "{e}"
    );
    let e = err_of(r#"{"id":1,"submit":0,"procs":4,"estimate":10"#);
    assert!(e.starts_with("jobs.jsonl:1: column "), "{e}");
    let e = err_of(r#"{"id":1,"submit":0,"procs":4,"estimate":10} x"#);
    assert!(e.contains("trailing characters"), "{e}");
    let e = err_of(r#"{"id":1,"submit":0,"procs":4,"estimate":10,"licences":["a","a"]}"#);
    assert_eq!(
        e,
        "jobs.jsonl:1: field `licences`: licence `a` is listed twice"
    );
    let e = err_of(r#"[1,0,4,10,null,null,null,null,null,[],null,[],null,null]"#);
    assert_eq!(e, "jobs.jsonl:1: expected a JSON object, found `[`");
    let e = err_of(r#"{"id":1,"submit":0,"procs":4,"estimate":10,"inputs":[{"size":1,"x":2}]}"#);
    assert!(
        e.starts_with("jobs.jsonl:1: field `inputs[0].x`: unknown field `x`"),
        "{e}"
    );
}

#[test]
fn validation_errors_name_line_and_field() {
    let e = err_of(r#"{"id":1,"submit":0,"procs":0,"estimate":10}"#);
    assert_eq!(
        e,
        "jobs.jsonl:1: field `procs`: a job needs at least one processor"
    );
    let e = err_of(r#"{"id":1,"submit":100,"procs":1,"estimate":10,"deadline":5}"#);
    assert!(e.starts_with("jobs.jsonl:1: field `deadline`"), "{e}");
    let e = err_of(r#"{"id":1,"submit":0,"procs":1,"estimate":10,"owner_priority":4}"#);
    assert!(e.starts_with("jobs.jsonl:1: field `owner_priority`"), "{e}");
}

#[test]
fn preassigned_licence_names() {
    let text = r#"{"id":1,"submit":0,"procs":1,"estimate":10,"licences":["c","a"]}"#;
    let mut r = JsonlReader::from_reader(text.as_bytes(), "j")
        .with_licence_names(&["a".to_owned(), "b".to_owned()])
        .unwrap();
    let j = r.next().unwrap().unwrap();
    assert_eq!(j.licences, vec![LicenceId(2), LicenceId(0)]);
    assert_eq!(r.licence_names(), ["a", "b", "c"]);
    assert!(
        JsonlReader::from_reader(&b""[..], "j")
            .with_licence_names(&["a".to_owned(), "a".to_owned()])
            .is_err()
    );
}
