//! Worked examples of the grid's reservation book: a request's checks and id, a site's answers,
//! lost answers taken back, cancellations, forgetting, and the jobs a reservation admits.

use super::super::*;
use crate::dispatch::{DispatchConfig, DispatchKind};
use crate::model::UserId;

/// Sites `a` (8 processors) and `b` (4), the reservation answer overdue after 3 s.
fn runner() -> GridRunner {
    let site = |i: u32, name: &str, procs: u32| SiteSpec {
        name: name.into(),
        ..super::super::tests::site(i, procs)
    };
    let cfg = GridConfig {
        sites: vec![site(0, "a", 8), site(1, "b", 4)],
        dispatch: DispatchConfig::new(DispatchKind::LoadOrdering),
        classifier: None,
        settings: GridSettings {
            reservation_answer_ms: 3_000,
            ..GridSettings::default()
        },
        classifier_state: None,
        usage_state: None,
    };
    GridRunner::from_config(&cfg).unwrap()
}

fn on(r: &mut GridRunner, now: Time, input: Input) -> Vec<Effect> {
    let mut out = Vec::new();
    r.on(now, input, &mut out).unwrap();
    out
}

fn request(site: &str, procs: u32, start: Time, end: Time) -> Input {
    request_at(site, procs, start, end, 0)
}

fn request_at(site: &str, procs: u32, start: Time, end: Time, at_ms: u64) -> Input {
    Input::Reserve {
        request: ReservationRequest {
            site: site.into(),
            procs,
            start,
            end,
            user: Some(UserId(7)),
        },
        at_ms,
    }
}

fn refusal(effects: &[Effect]) -> (Field, Kind, String) {
    match effects {
        [Effect::ReservationRefused { refusal: r }] => (r.field, r.kind, r.why.clone()),
        other => panic!("not refused: {other:?}"),
    }
}

/// Reserves 4 processors of `a` over [1000, 1100) at 900, held on a machine of score `speed`:
/// its id.
fn held(r: &mut GridRunner, speed: Option<u32>) -> ReservationId {
    let e = on(r, 900, request("a", 4, 1_000, 1_100));
    let [Effect::AskReservation { reservation }] = &e[..] else {
        panic!("{e:?}");
    };
    let id = reservation.id;
    let answer = ReservationAnswer::Held { speed };
    let e = on(
        r,
        900,
        Input::ReservationAnswer {
            reservation: id,
            answer,
        },
    );
    assert_eq!(e, [Effect::ReservationHeld { reservation: id }]);
    id
}

fn job_in(id: u64, procs: u32, estimate: i64, r: ReservationId) -> Job {
    Job {
        user: UserId(7),
        reservation: Some(r),
        ..Job::new(id, 900, procs, estimate, estimate)
    }
}

#[test]
fn a_request_is_checked_then_asked_with_the_grids_next_id() {
    let mut r = runner();
    let (f, k, why) = refusal(&on(&mut r, 900, request("c", 1, 1_000, 1_100)));
    assert_eq!((f, k), (Field::ReservationSite, Kind::NotFound));
    assert_eq!(why, "unknown site `c`");
    let (f, k, _) = refusal(&on(&mut r, 900, request("a", 0, 1_000, 1_100)));
    assert_eq!((f, k), (Field::ReservationProcs, Kind::Invalid));
    let (f, _, why) = refusal(&on(&mut r, 900, request("b", 5, 1_000, 1_100)));
    assert_eq!(f, Field::ReservationProcs);
    assert_eq!(why, "5 processors exceed what b runs as one job (4)");
    let (f, _, _) = refusal(&on(&mut r, 900, request("a", 1, 1_100, 1_100)));
    assert_eq!(f, Field::ReservationEnd);
    let (f, k, why) = refusal(&on(&mut r, 900, request("a", 1, 800, 1_100)));
    assert_eq!((f, k), (Field::ReservationStart, Kind::Precondition));
    assert_eq!(why, "800 is in the past (now is 900)");
    // Ids follow those already given (holds and reservations share one counter).
    on(&mut r, 900, Input::Reservations { last: 10 });
    let e = on(&mut r, 900, request("b", 4, 1_000, 1_100));
    let [Effect::AskReservation { reservation }] = &e[..] else {
        panic!("{e:?}");
    };
    assert_eq!((reservation.id, reservation.site), (ReservationId(11), 1));
    assert_eq!(r.last_reservation(), 11);
}

#[test]
fn a_refused_reservation_is_dropped_a_lost_answer_taken_back_once_overdue() {
    let mut r = runner();
    let asked = |r: &mut GridRunner, at_ms| {
        let e = on(r, 900, request_at("a", 2, 1_000, 1_100, at_ms));
        match &e[..] {
            [Effect::AskReservation { reservation }] => reservation.id,
            other => panic!("{other:?}"),
        }
    };
    let one = asked(&mut r, 0);
    let why = "refused by a: busy".to_string();
    let answer = ReservationAnswer::Refused { why: why.clone() };
    let e = on(
        &mut r,
        900,
        Input::ReservationAnswer {
            reservation: one,
            answer,
        },
    );
    assert_eq!(
        e,
        [Effect::ReservationDropped {
            reservation: one,
            why
        }]
    );
    assert!(r.reservation(one).is_none());
    // Lost: nothing at once, nor before the answer is overdue.
    let two = asked(&mut r, 1_000);
    let lost = Input::ReservationAnswer {
        reservation: two,
        answer: ReservationAnswer::Lost,
    };
    assert!(on(&mut r, 901, lost).is_empty());
    assert!(on(&mut r, 903, Input::Tick { at_ms: 3_999 }).is_empty());
    let back = [Effect::TakeBack {
        reservation: two,
        site: 0,
    }];
    assert_eq!(on(&mut r, 904, Input::Tick { at_ms: 4_000 }), back);
    // Not asked again while the first take-back may be under way; again a second later.
    assert!(on(&mut r, 904, Input::Tick { at_ms: 4_200 }).is_empty());
    let failed = Input::TakenBack {
        reservation: two,
        gone: false,
    };
    assert!(on(&mut r, 904, failed).is_empty());
    assert_eq!(on(&mut r, 905, Input::Tick { at_ms: 5_000 }), back);
    let e = on(
        &mut r,
        905,
        Input::TakenBack {
            reservation: two,
            gone: true,
        },
    );
    let why = "never confirmed".to_string();
    assert_eq!(
        e,
        [Effect::ReservationDropped {
            reservation: two,
            why
        }]
    );
    assert!(on(&mut r, 906, Input::Tick { at_ms: 6_000 }).is_empty());
    // A late answer for a reservation gone changes nothing.
    let late = Input::ReservationAnswer {
        reservation: two,
        answer: ReservationAnswer::Held { speed: None },
    };
    assert!(on(&mut r, 906, late).is_empty());
}

/// A restored reservation still unanswered is taken back once overdue, counted from the first
/// tick after the restart; a held one is kept.
#[test]
fn a_restored_unanswered_reservation_is_taken_back() {
    let mut r = runner();
    let restore = |id, standing| Input::RestoreReservation {
        reservation: Reservation {
            id: ReservationId(id),
            site: 1,
            procs: 1,
            start: 1_000,
            end: 1_100,
            user: None,
            standing,
        },
    };
    on(
        &mut r,
        900,
        restore(4, Standing::Asked { at_ms: Some(123) }),
    );
    on(&mut r, 900, restore(5, Standing::Held { speed: None }));
    assert_eq!(r.last_reservation(), 5);
    assert!(on(&mut r, 900, Input::Tick { at_ms: 50_000 }).is_empty());
    let e = on(&mut r, 903, Input::Tick { at_ms: 53_000 });
    assert_eq!(
        e,
        [Effect::TakeBack {
            reservation: ReservationId(4),
            site: 1
        }]
    );
}

#[test]
fn a_cancelled_reservation_is_taken_back_an_ended_one_forgotten() {
    let mut r = runner();
    let id = held(&mut r, None);
    let cancel = Input::CancelReservation {
        reservation: id,
        at_ms: 0,
    };
    let back = [Effect::TakeBack {
        reservation: id,
        site: 0,
    }];
    assert_eq!(on(&mut r, 950, cancel.clone()), back);
    // The site could not be reached: the reservation stands.
    let failed = Input::TakenBack {
        reservation: id,
        gone: false,
    };
    assert!(on(&mut r, 950, failed).is_empty());
    assert!(r.reservation(id).is_some());
    assert_eq!(on(&mut r, 951, cancel), back);
    let e = on(
        &mut r,
        951,
        Input::TakenBack {
            reservation: id,
            gone: true,
        },
    );
    let why = "cancelled".to_string();
    assert_eq!(
        e,
        [Effect::ReservationDropped {
            reservation: id,
            why
        }]
    );
    // Over: forgotten at once when cancelled, or on the first tick a day after its end.
    let over = held(&mut r, None);
    let cancel = Input::CancelReservation {
        reservation: over,
        at_ms: 0,
    };
    let e = on(&mut r, 1_100, cancel);
    assert!(
        matches!(&e[..], [Effect::ReservationDropped { .. }]),
        "{e:?}"
    );
    let old = held(&mut r, None);
    assert!(on(&mut r, 1_100 + KEEP_ENDED_S - 1, Input::Tick { at_ms: 9 }).is_empty());
    let e = on(&mut r, 1_100 + KEEP_ENDED_S, Input::Tick { at_ms: 10 });
    let why = "ended".to_string();
    assert_eq!(
        e,
        [Effect::ReservationDropped {
            reservation: old,
            why
        }]
    );
}

#[test]
fn a_job_in_a_reservation_is_admitted_only_as_it_fits_and_goes_to_its_site() {
    let mut r = runner();
    let admit = |r: &GridRunner, j: &Job| r.admit(950, j).map_err(|e| (e.kind, e.why));
    // Not known, then not confirmed yet.
    let (k, why) = admit(&r, &job_in(1, 1, 10, ReservationId(1))).unwrap_err();
    assert_eq!(
        (k, why.as_str()),
        (Kind::NotFound, "reservation r1 is not known")
    );
    on(&mut r, 900, request("a", 4, 1_000, 1_100));
    let (k, _) = admit(&r, &job_in(1, 1, 10, ReservationId(1))).unwrap_err();
    assert_eq!(k, Kind::Precondition);
    // Held on a machine of score 4: a 150 s estimate measured at score 2 takes 75 s there.
    let id = held(&mut r, Some(4));
    let fast = Job {
        benchmark: Some(2),
        ..job_in(2, 4, 150, id)
    };
    assert_eq!(admit(&r, &fast), Ok(Some(0)));
    let (k, why) = admit(
        &r,
        &Job {
            benchmark: None,
            ..fast.clone()
        },
    )
    .unwrap_err();
    assert_eq!(k, Kind::Precondition);
    assert!(why.contains("estimate of 150 s cannot end"), "{why}");
    let (_, why) = admit(&r, &job_in(3, 5, 10, id)).unwrap_err();
    assert_eq!(
        why,
        format!("the job needs 5 processors, reservation {id} holds 4")
    );
    let theirs = Job {
        user: UserId(8),
        ..job_in(4, 1, 10, id)
    };
    assert_eq!(admit(&r, &theirs).unwrap_err().0, Kind::Forbidden);
    assert_eq!(
        r.admit(1_100, &job_in(5, 1, 10, id)).unwrap_err().why,
        format!("reservation {id} ended at 1100")
    );
    // Admitted, it goes to the reservation's site only, though the other is as idle.
    let e = on(
        &mut r,
        950,
        Input::Submit {
            job: job_in(6, 4, 10, id),
            priority: None,
        },
    );
    assert!(matches!(&e[..], [Effect::Place { site: 0, .. }]), "{e:?}");
    let e = on(
        &mut r,
        950,
        Input::Submit {
            job: job_in(7, 1, 10, ReservationId(99)),
            priority: None,
        },
    );
    assert!(
        matches!(
            &e[..],
            [Effect::Refuse {
                refusal: Some(Refusal {
                    field: Field::Reservation,
                    kind: Kind::NotFound,
                    ..
                }),
                ..
            }]
        ),
        "{e:?}"
    );
}
