//! Unit tests of `judge`.

use super::*;
use crate::generate::decode;

fn sent(client: u8, op: u8, req: Req) -> Obs {
    Obs::Sent { client, op, req }
}

fn got(client: u8, op: u8, answer: Answer) -> Obs {
    Obs::Answered { client, op, answer }
}

fn step(session: &str, text: &str) -> Obs {
    Obs::Update {
        session: session.into(),
        update: Update::Text(format!("agent: echo: {text}")),
    }
}

fn prompt(session: &str, steps: u8) -> Req {
    Req::Prompt {
        session: session.into(),
        steps,
        hung: false,
    }
}

fn cancel(session: &str) -> Req {
    Req::Cancel {
        session: session.into(),
    }
}

fn end(r: StopReason) -> Answer {
    Answer::Prompt(Ok(r))
}

/// `session/new`, then a prompt of one step on it, answered `r`, with
/// `updates` in between.
fn one_prompt(updates: Vec<Obs>, r: StopReason) -> Vec<Obs> {
    let mut h = vec![
        sent(0, 0, Req::New),
        got(0, 0, Answer::New(Ok("sess-1".into()))),
        sent(0, 1, prompt("sess-1", 1)),
    ];
    h.extend(updates);
    h.push(got(0, 1, end(r)));
    h
}

#[test]
fn a_turn_that_ran_is_explained() {
    let w = decode("n.p01").unwrap();
    let h = one_prompt(vec![step("sess-1", "c0o1/0")], StopReason::EndTurn);
    assert_eq!(judge(&w, &h), Ok(()));
}

#[test]
fn planted_replies_the_model_does_not_allow_are_reported() {
    let w = decode("n.p01").unwrap();
    // end_turn without the turn's step.
    let v = judge(&w, &one_prompt(vec![], StopReason::EndTurn)).unwrap_err();
    assert_eq!(v.rule, Rule::A8, "{}", v.message);
    assert!(v.message.contains("observation #4"), "{}", v.message);
    // cancelled with no cancel and no disconnect.
    let h = one_prompt(vec![step("sess-1", "c0o1/0")], StopReason::Cancelled);
    assert!(judge(&w, &h).is_err());
    // a step of a prompt that was never sent.
    let h = one_prompt(vec![step("sess-1", "c0o7/0")], StopReason::EndTurn);
    assert!(judge(&w, &h).is_err());
    // the same step twice.
    let twice = vec![step("sess-1", "c0o1/0"), step("sess-1", "c0o1/0")];
    assert!(judge(&w, &one_prompt(twice, StopReason::EndTurn)).is_err());
}

#[test]
fn each_disk_failure_explains_one_storage_error_and_no_more() {
    let w = decode("n.f.p01.p01.a").unwrap();
    let failed = || Answer::Prompt(Err(AcpError::Storage("ENOSPC".into())));
    let base = || {
        vec![
            sent(0, 0, Req::New),
            got(0, 0, Answer::New(Ok("sess-1".into()))),
            sent(0, 1, Req::DiskFault { sync: false }),
            Obs::Admitted { client: 0, op: 1 },
            sent(0, 2, prompt("sess-1", 1)),
            Obs::Admitted { client: 0, op: 2 },
            got(0, 2, failed()),
        ]
    };
    // One failure: one prompt fails, and the next one recovers (D10).
    let mut h = base();
    h.extend([
        sent(0, 3, prompt("sess-1", 1)),
        Obs::Admitted { client: 0, op: 3 },
        step("sess-1", "c0o3/0"),
        got(0, 3, end(StopReason::EndTurn)),
    ]);
    assert_eq!(judge(&w, &h), Ok(()));
    // The session still refuses the next prompt (fault M26's reply).
    let mut h = base();
    h.extend([
        sent(0, 3, prompt("sess-1", 1)),
        Obs::Admitted { client: 0, op: 3 },
        got(0, 3, failed()),
    ]);
    let v = judge(&w, &h).unwrap_err();
    assert_eq!(v.rule, Rule::D10, "{}", v.message);
    // A storage error with no disk failure at all.
    let w = decode("n.p01").unwrap();
    let h = vec![
        sent(0, 0, Req::New),
        got(0, 0, Answer::New(Ok("sess-1".into()))),
        sent(0, 1, prompt("sess-1", 1)),
        got(0, 1, failed()),
    ];
    assert_eq!(judge(&w, &h).unwrap_err().rule, Rule::D10);
}

#[test]
fn a_step_that_ends_only_when_signalled_never_ends_the_turn_by_itself() {
    let w = decode("n.i0").unwrap();
    let hung = Req::Prompt {
        session: "sess-1".into(),
        steps: 1,
        hung: true,
    };
    let mut h = vec![
        sent(0, 0, Req::New),
        got(0, 0, Answer::New(Ok("sess-1".into()))),
        sent(0, 1, hung),
        Obs::Admitted { client: 0, op: 1 },
        sent(0, 1, cancel("sess-1")),
        Obs::Admitted { client: 0, op: 1 },
        Obs::Update {
            session: "sess-1".into(),
            update: Update::Text("agent: cancelled: the command was killed".into()),
        },
    ];
    let mut ended = h.clone();
    ended.push(got(0, 1, end(StopReason::EndTurn)));
    assert!(judge(&w, &ended).is_err());
    h.push(got(0, 1, end(StopReason::Cancelled)));
    assert_eq!(judge(&w, &h), Ok(()));
}

#[test]
fn a_cancel_reaches_a_prompt_waiting_behind_a_cancelled_one() {
    // M27's history: P1 runs, cancel, P2 waits (A8), cancel, P2 runs.
    // P1's second step after the second cancel shows P1 still ran
    // then, so P2 was waiting when that cancel arrived.
    let w = decode("n.p02.c0.p01.c0").unwrap();
    let mut h = vec![
        sent(0, 0, Req::New),
        got(0, 0, Answer::New(Ok("sess-1".into()))),
        sent(0, 1, prompt("sess-1", 2)),
        step("sess-1", "c0o1/0"),
        sent(0, 2, cancel("sess-1")),
        Obs::Admitted { client: 0, op: 2 },
        sent(0, 3, prompt("sess-1", 1)),
        Obs::Admitted { client: 0, op: 3 },
        sent(0, 4, cancel("sess-1")),
        Obs::Admitted { client: 0, op: 4 },
        step("sess-1", "c0o1/1"),
        got(0, 1, end(StopReason::Cancelled)),
    ];
    let mut ran = h.clone();
    ran.push(step("sess-1", "c0o3/0"));
    ran.push(got(0, 3, end(StopReason::EndTurn)));
    let v = judge(&w, &ran).unwrap_err();
    assert_eq!(v.rule, Rule::A2, "{}", v.message);
    h.push(got(0, 3, end(StopReason::Cancelled)));
    assert_eq!(judge(&w, &h), Ok(()));
}

#[test]
fn a_prompt_waits_for_the_load_and_the_replay_is_the_stored_history() {
    let w = decode("l.po1").unwrap();
    let stored = old_history();
    let history = |i: usize| Obs::Update {
        session: OLD.into(),
        update: Update::Text(stored[i].clone()),
    };
    let mut h = vec![sent(0, 0, Req::Load), sent(0, 1, prompt(OLD, 1))];
    h.extend((0..stored.len()).map(history));
    h.push(got(0, 0, Answer::Load(Ok(()))));
    h.push(step(OLD, "c0o1/0"));
    h.push(got(0, 1, end(StopReason::EndTurn)));
    assert_eq!(judge(&w, &h), Ok(()));
    // M28: the prompt's step inside the replay.
    let mut inside = h.clone();
    let s = inside.remove(inside.len() - 2);
    inside.insert(3, s);
    let v = judge(&w, &inside).unwrap_err();
    assert_eq!(v.rule, Rule::A9, "{}", v.message);
    // An item sent twice.
    let mut twice = h.clone();
    twice.insert(3, history(0));
    assert_eq!(judge(&w, &twice).unwrap_err().rule, Rule::A9);
    // The answer before the replay ends.
    let mut early = h;
    let answer = early.remove(2 + stored.len());
    early.insert(2, answer);
    assert!(judge(&w, &early).is_err());
}

fn close(session: &str) -> Req {
    Req::Close {
        session: session.into(),
    }
}

#[test]
fn a_close_cancels_the_sessions_turn_and_answers_after_it() {
    let w = decode("n.p01.z0.p01").unwrap();
    let unknown = || Answer::Prompt(Err(AcpError::UnknownSession("sess-1".into())));
    let mut h = vec![
        sent(0, 0, Req::New),
        got(0, 0, Answer::New(Ok("sess-1".into()))),
        sent(0, 1, prompt("sess-1", 1)),
        sent(0, 2, close("sess-1")),
        sent(0, 3, prompt("sess-1", 1)),
        got(0, 3, unknown()),
        got(0, 1, end(StopReason::Cancelled)),
        got(0, 2, Answer::Close(Ok(()))),
    ];
    assert_eq!(judge(&w, &h), Ok(()));
    // The turn may have ended by itself before the close reached it.
    let mut ran = h.clone();
    ran.insert(3, step("sess-1", "c0o1/0"));
    ran[7] = got(0, 1, end(StopReason::EndTurn));
    assert_eq!(judge(&w, &ran), Ok(()));
    // Planted: a prompt after the close that runs.
    let mut after = h.clone();
    after[5] = got(0, 3, end(StopReason::EndTurn));
    assert!(judge(&w, &after).is_err());
    // Planted: the close answered as unknown.
    h[7] = got(
        0,
        2,
        Answer::Close(Err(AcpError::UnknownSession("sess-1".into()))),
    );
    let v = judge(&w, &h).unwrap_err();
    assert_eq!(v.rule, Rule::A4, "{}", v.message);
}

#[test]
fn a_load_after_a_close_of_old_resumes_it_or_finds_it_still_tearing_down() {
    let w = decode("l.a.zo.l").unwrap();
    let stored = old_history();
    let mut h = vec![sent(0, 0, Req::Load)];
    h.extend(stored.iter().map(|t| Obs::Update {
        session: OLD.into(),
        update: Update::Text(t.clone()),
    }));
    h.push(got(0, 0, Answer::Load(Ok(()))));
    h.push(sent(0, 2, close(OLD)));
    h.push(sent(0, 3, Req::Load));
    let exists = Answer::Load(Err(AcpError::Create(CreateError::AlreadyExists(
        OLD.into(),
    ))));
    let mut racing = h.clone();
    racing.push(got(0, 3, exists.clone()));
    racing.push(got(0, 2, Answer::Close(Ok(()))));
    assert_eq!(judge(&w, &racing), Ok(()));
    // After the teardown, the resume succeeds.
    let mut after = h.clone();
    after.push(got(0, 2, Answer::Close(Ok(()))));
    after.push(got(0, 3, Answer::Load(Ok(()))));
    assert_eq!(judge(&w, &after), Ok(()));
    // Planted: the close answered as if old were unknown.
    let mut unknown = h;
    unknown.push(got(
        0,
        2,
        Answer::Close(Err(AcpError::UnknownSession(OLD.into()))),
    ));
    assert_eq!(judge(&w, &unknown).unwrap_err().rule, Rule::A4);
}

fn update(session: &str, u: Update) -> Obs {
    Obs::Update {
        session: session.into(),
        update: u,
    }
}

/// Client 1 news `sessions` sessions, then prompts `sess-1` with a
/// job's script (op `sessions`): its start, its reply, its answer.
fn job_turn(sessions: u8) -> Vec<Obs> {
    let mut h = Vec::new();
    for k in 0..sessions {
        h.push(sent(0, k, Req::New));
        h.push(got(0, k, Answer::New(Ok(format!("sess-{}", k + 1)))));
    }
    let j = sessions;
    h.extend([
        sent(0, j, prompt("sess-1", 2)),
        Obs::Admitted { client: 0, op: j },
        update("sess-1", Update::JobStarted("job-1".into())),
        update("sess-1", Update::Text("agent: started job-1".into())),
        step("sess-1", &format!("c0o{j}&/1")),
        got(0, j, end(StopReason::EndTurn)),
    ]);
    h
}

#[test]
fn a11_a_job_ends_once_on_the_session_that_started_it() {
    let w = decode("n.j0").unwrap();
    let mut h = job_turn(1);
    h.push(update("sess-1", Update::Notice("job-1".into())));
    assert_eq!(judge(&w, &h), Ok(()));
    h.push(update("sess-1", Update::Notice("job-1".into())));
    assert_eq!(judge(&w, &h).unwrap_err().rule, Rule::A11);
}

#[test]
fn a11_a_job_whose_start_was_never_sent_ends_only_after_a_storage_error() {
    let w = decode("n.j0").unwrap();
    let h = vec![
        sent(0, 0, Req::New),
        got(0, 0, Answer::New(Ok("sess-1".into()))),
        sent(0, 1, prompt("sess-1", 2)),
        Obs::Admitted { client: 0, op: 1 },
        update("sess-1", Update::Notice("job-1".into())),
    ];
    assert_eq!(judge(&w, &h).unwrap_err().rule, Rule::A11);
}

#[test]
fn a11_a_job_never_ends_on_another_session() {
    let w = decode("n.n.j0").unwrap();
    let mut h = job_turn(2);
    h.push(update("sess-2", Update::Notice("job-1".into())));
    assert_eq!(judge(&w, &h).unwrap_err().rule, Rule::A11);
}

#[test]
fn a11_a_job_never_ends_inside_another_prompts_message_stream() {
    let w = decode("n.j0.p02").unwrap();
    let mut h = job_turn(1);
    h.extend([
        sent(0, 2, prompt("sess-1", 2)),
        Obs::Admitted { client: 0, op: 2 },
        step("sess-1", "c0o2/0"),
    ]);
    let mut between = h.clone();
    between.push(update("sess-1", Update::Notice("job-1".into())));
    assert_eq!(judge(&w, &between).unwrap_err().rule, Rule::A11);
    h.extend([
        step("sess-1", "c0o2/1"),
        update("sess-1", Update::Notice("job-1".into())),
        got(0, 2, end(StopReason::EndTurn)),
    ]);
    assert_eq!(judge(&w, &h), Ok(()));
}
