//! The clauses of SPEC §2 and their exercises (see the module docs of
//! [`super`]). A clause is one obligation of a rule, in short; the rule's
//! full text is in `SPEC.md`.

use super::Conformance::{Acp, Agent, Dispose, Durability, Shell};
use super::Rule::{self, *};
use super::{Clause, ClauseId, Conformance, Exercise};
use crate::scenarios::{
    acp, cancel, crash, dispose, dispose_during_load, dropped_create, dropped_dispose,
    dropped_unload, hung_step, identity, idle, owner_drain, shell, storage_error, Goal, Scenario,
};
use lifecycle_models::acp::{
    A1_NONE, A2_CANCELLED_NEVER_RUNS, A4_DISPOSED_ANSWERS_CANCELLED, A5_NEVER_LOADED_TWICE,
    A6_ONE_QUIESCE, A7_NEW_AFTER_CLOSE, A8_ONE_IN_FLIGHT,
};
use lifecycle_models::agent::{
    C1_EMITTED, C2_QUEUED_BY_OBSERVER, C3_ENDS, C4_NEVER, C5_NEVER_SKIPPED, C6_IDLE_CANCEL,
    C7_EVERY_WAITER, C7_ONLY, C8_NO_STEERING, D6_NO_PROMPT_STARTS,
};
use lifecycle_models::dispose::{
    D1_AFTER_TEARDOWN, D2_ONCE_IN_ORDER, D3_DURABLE, D4_LISTENER_SKIPS_NOTHING, D5_KEEPS_ENTRY,
    D7_PROVIDER_UNLOAD, D8_DROPPED, R1_LOSER_FAILS, R1_ONE, R2_REUSE_ON_DETACH,
    R3_FAILED_LEAVES_NOTHING, R3_NOTHING_AFTER_UNLOAD,
};
use lifecycle_models::durability::{
    D10_NOTHING_UNTIL_REPAIRED, D9_NO_OPEN_TURN, D9_SHOWN_IS_DURABLE, D9_SYNCED_SURVIVES,
    D9_TORN_TAIL, D9_WRITE_AHEAD,
};
use lifecycle_models::shell::{
    S1_OWNED, S2_OTHER, S3_EMPTY_TOKEN, S4_OWNER_KEEPS_ACCESS, S5_RELOAD_KEEPS_FENCES,
    S6_EVERY_JOB_FINISHES, S6_ONLY, S7_KILLED_AND_FORGOTTEN,
};
use lifecycle_models::PropertyId;

const fn clause(rule: Rule, n: u8, text: &'static str, exercises: &'static [Exercise]) -> Clause {
    Clause {
        id: ClauseId { rule, n },
        text,
        exercises,
    }
}

/// A scenario and its goal.
const fn sc(scenario: &'static Scenario, goal: &'static Goal) -> Exercise {
    Exercise::Scenario { scenario, goal }
}

/// A conformance operation and the model property that states the clause.
const fn op(test: Conformance, op: &'static str, property: PropertyId) -> Exercise {
    Exercise::Conformance {
        test,
        op,
        property: Some(property),
    }
}

/// A conformance operation whose expected answer the test fixes itself.
const fn op_only(test: Conformance, op: &'static str) -> Exercise {
    Exercise::Conformance {
        test,
        op,
        property: None,
    }
}

/// An integration test function.
const fn test(target: &'static str, name: &'static str) -> Exercise {
    Exercise::Test { target, name }
}

/// Every clause of every rule of SPEC §2, in SPEC order.
pub static CLAUSES: &[Clause] = &[
    // Cancel.
    clause(C1, 1, "cancel is the only public stop verb; a call is effective when a turn is active or the inbox holds work", &[
        sc(&cancel::CANCEL_BEFORE_CLAIM, &cancel::BEFORE_WAKE),
        sc(&idle::IDLE_CANCEL_THEN_PROMPT, &idle::IDLE_CANCEL),
        op(Agent, "Cancel", C1_EMITTED),
    ]),
    clause(C1, 2, "an effective call emits agent/cancel-requested {cause} exactly once, before it clears or aborts anything", &[
        sc(&cancel::OBSERVER_QUEUES_DURING_CANCEL, &cancel::OBSERVER_QUEUES_DURING_NOTIFICATION),
        sc(&cancel::CANCEL_MID_TURN, &cancel::CANCEL_DURING_STEP),
        op(Agent, "Cancel", C1_EMITTED),
    ]),
    clause(C2, 1, "every call clears both FIFOs: queued prompts and steering inputs", &[
        sc(&cancel::CANCEL_MID_TURN, &cancel::CANCEL_DURING_STEP),
        sc(&cancel::CANCEL_DROPS_STEERING, &cancel::PROMPT_AFTER_DROPPED_STEERING),
        op_only(Agent, "Cancel"),
    ]),
    clause(C2, 2, "including work that a cancel-requested observer queued during the notification", &[
        sc(&cancel::OBSERVER_QUEUES_DURING_CANCEL, &cancel::OBSERVER_QUEUES_DURING_NOTIFICATION),
        op(Agent, "Cancel", C2_QUEUED_BY_OBSERVER),
    ]),
    clause(C3, 1, "with a turn active, its token is requested with the cause; the turn ends at its next step boundary with turn/end {aborted}", &[
        sc(&cancel::CANCEL_MID_TURN, &cancel::CANCEL_DURING_STEP),
        sc(&cancel::CANCEL_BEFORE_CLAIM, &cancel::ABORT_BEFORE_FIRST_STEP),
        op(Agent, "Cancel", C3_ENDS),
    ]),
    clause(C3, 2, "the first cause wins", &[
        sc(&cancel::CANCEL_MID_TURN, &cancel::TWO_CAUSES_ONE_TURN),
    ]),
    clause(C3, 3, "disposal overrides: a turn stopped by disposal ends {disposed}, even if a cancel came first", &[
        sc(&dispose::CANCEL_THEN_DISPOSE, &dispose::DISPOSE_BEFORE_TURN_END),
        sc(&hung_step::HUNG_STEP, &hung_step::DISPOSED_MID_STEP),
        op(Agent, "Dispose", C3_ENDS),
    ]),
    clause(C4, 1, "a prompt accepted before an effective cancel never starts: no turn/start, no user/message for it", &[
        sc(&cancel::CANCEL_BEFORE_CLAIM, &cancel::BEFORE_WAKE),
        op(Agent, "Cancel", C4_NEVER),
    ]),
    clause(C4, 2, "even when the loop had already woken for it: the pre-run marker, set only by an effective cancel with no active turn, consumed between wake and claim", &[
        sc(&cancel::CANCEL_BEFORE_CLAIM, &cancel::BETWEEN_WAKE_AND_CLAIM),
        sc(&cancel::CANCEL_BEFORE_CLAIM, &cancel::WAKE_INSIDE_CANCEL),
        op(Agent, "Loop", C4_NEVER),
    ]),
    clause(C5, 1, "a prompt accepted after cancel returned is independent: it runs exactly once", &[
        sc(&cancel::CANCEL_BEFORE_CLAIM, &cancel::BETWEEN_WAKE_AND_CLAIM),
        sc(&cancel::CANCEL_DROPS_STEERING, &cancel::PROMPT_AFTER_DROPPED_STEERING),
        op(Agent, "Send", C5_NEVER_SKIPPED),
    ]),
    clause(C6, 1, "an idle cancel (no turn, empty inbox) emits nothing and sets no marker", &[
        sc(&idle::IDLE_CANCEL_THEN_PROMPT, &idle::IDLE_CANCEL),
        sc(&cancel::CANCEL_MID_TURN, &cancel::SECOND_CANCEL_IDLE),
        op(Agent, "Cancel", C6_IDLE_CANCEL),
    ]),
    clause(C6, 2, "after an idle cancel the next prompt runs", &[
        sc(&idle::IDLE_CANCEL_THEN_PROMPT, &idle::PROMPT_AFTER_IDLE_CANCEL),
        op(Agent, "Send", C6_IDLE_CANCEL),
    ]),
    clause(C7, 1, "when_idle resolves only at quiescence: no turn, empty inbox, marker consumed", &[
        sc(&idle::WHEN_IDLE_WAITERS, &idle::LATE_WAITER_WHILE_B_PENDING),
        sc(&idle::DROPPED_WHEN_IDLE, &idle::WAITER_RESOLVED_FIRST),
        op(Agent, "WhenIdle", C7_ONLY),
    ]),
    clause(C7, 2, "a waiter registered before a cancel resolves", &[
        sc(&idle::WHEN_IDLE_WAITERS, &idle::WAITER_ACROSS_CANCEL),
        op(Agent, "WhenIdle", C7_EVERY_WAITER),
    ]),
    clause(C7, 3, "it does not resolve while a prompt accepted after the cancel is queued or running", &[
        sc(&idle::WHEN_IDLE_WAITERS, &idle::LATE_WAITER_WHILE_B_PENDING),
        op(Agent, "WhenIdle", C7_ONLY),
    ]),
    clause(C7, 4, "after disposal it resolves with done", &[
        op(Agent, "WhenIdle", C7_ONLY),
        op(Agent, "Dispose", C7_ONLY),
    ]),
    clause(C8, 1, "steering inputs of a cancelled turn are never absorbed nor logged", &[
        sc(&cancel::CANCEL_DROPS_STEERING, &cancel::PROMPT_AFTER_DROPPED_STEERING),
        sc(&cancel::CANCEL_MID_TURN, &cancel::CANCEL_DURING_STEP),
        op(Agent, "Steer", C8_NO_STEERING),
    ]),
    clause(C9, 1, "a failing (panicking or erroring) observer cannot veto or skip the cancel", &[
        sc(&cancel::OBSERVER_QUEUES_DURING_CANCEL, &cancel::OBSERVER_QUEUES_DURING_NOTIFICATION),
        op_only(Agent, "Cancel"),
    ]),
    clause(C10, 1, "a step receives the turn's cancellation signal; when cancel or disposal fires it, the step settles and the turn ends aborted or disposed", &[
        sc(&hung_step::HUNG_STEP, &hung_step::ABORTED_MID_STEP),
        sc(&hung_step::HUNG_STEP, &hung_step::DISPOSED_MID_STEP),
    ]),
    clause(C10, 2, "a sleep or model request stops waiting: a cancel is never held up longer than one step takes to notice the signal", &[
        sc(&hung_step::HUNG_STEP, &hung_step::ABORTED_MID_STEP),
        test("acp_server", "acp_server_lifecycle_over_pipes"),
    ]),
    clause(C10, 3, "a foreground shell command is killed with its whole process group", &[
        test("acp_processes", "a10_disconnect_leaves_no_process_of_any_session"),
    ]),
    // Dispose.
    clause(D1, 1, "memoized: the handle, the caller scope's unload and the provider's unload reach one teardown, which runs once", &[
        sc(&dispose::CONCURRENT_DISPOSE, &dispose::DISPOSE_MID_TURN_GOAL),
        sc(&dispose::OWNER_UNLOAD_VS_HANDLE_DISPOSE, &dispose::TEARDOWN_MID_TURN),
        sc(&dispose::PROVIDER_UNLOAD, &dispose::UNLOAD_MID_TURN),
        op(Dispose, "DisposeAndUnloadOwner", D1_AFTER_TEARDOWN),
    ]),
    clause(D1, 2, "every caller's future resolves only when all of the teardown is done", &[
        sc(&dispose::CONCURRENT_DISPOSE, &dispose::DISPOSE_DURING_FLUSH),
        sc(&dropped_dispose::DROPPED_DISPOSE, &dropped_dispose::DROPPED_MID_TEARDOWN),
        op(Dispose, "DisposeAndUnloadOwner", D1_AFTER_TEARDOWN),
    ]),
    clause(D2, 1, "step 1 stops the loop: mark disposed, request the turn token {disposed}, clear the inbox", &[
        sc(&dispose::DISPOSE_MID_TURN, &dispose::TAIL_CLEARED),
        sc(&dispose::DISPOSE_MID_TURN, &dispose::DISPOSE_DURING_STEP),
        op(Dispose, "Dispose", D2_ONCE_IN_ORDER),
    ]),
    clause(D2, 2, "step 2 awaits the loop's exit and every pending flush", &[
        sc(&dispose::CONCURRENT_DISPOSE, &dispose::DISPOSE_DURING_FLUSH),
        op(Dispose, "Dispose", D2_ONCE_IN_ORDER),
    ]),
    clause(D2, 3, "then, in order: (3) detach the agent from the registry (agent/disposed), (4) detach the session (session/disposed), (5) unwind the agent's private scope", &[
        sc(&identity::SAME_ID_VS_TEARDOWN, &identity::CREATE_BETWEEN_3_4),
        sc(&identity::SAME_ID_VS_TEARDOWN, &identity::CREATE_BETWEEN_4_5),
        op(Dispose, "Dispose", D2_ONCE_IN_ORDER),
    ]),
    clause(D2, 4, "steps 1-5 live in one composite effect (not sibling effects disposed concurrently)", &[
        sc(&dispose::DISPOSE_MID_TURN, &dispose::DISPOSE_DURING_STEP),
        sc(&dispose::OWNER_UNLOAD_VS_HANDLE_DISPOSE, &dispose::TEARDOWN_MID_TURN),
    ]),
    clause(D3, 1, "after any dispose path, reloading the session's durable log yields every event that was appended", &[
        sc(&dispose::DISPOSE_MID_TURN, &dispose::DISPOSE_DURING_STEP),
        sc(&dispose::CONCURRENT_DISPOSE, &dispose::DISPOSE_DURING_FLUSH),
        op(Dispose, "Dispose", D3_DURABLE),
    ]),
    clause(D3, 2, "every started turn has its turn/end, reason disposed when disposal stopped it", &[
        sc(&dispose::DISPOSE_MID_TURN, &dispose::DISPOSE_DURING_STEP),
        sc(&dispose::CANCEL_THEN_DISPOSE, &dispose::DISPOSE_BEFORE_TURN_END),
        sc(&acp::DISCONNECT_MID_PROMPT, &acp::DISCONNECT_DURING_PROMPT),
        op(Dispose, "DisposeAndUnloadOwner", D3_DURABLE),
    ]),
    clause(D4, 1, "a failing agent/disposed or session/disposed listener cannot reject the chain or skip a later step", &[
        sc(&dispose::DISPOSED_LISTENER_PANICS, &dispose::LISTENERS_PANIC_MID_TURN),
        op(Dispose, "Dispose", D4_LISTENER_SKIPS_NOTHING),
    ]),
    clause(D5, 1, "disposing one agent leaves every other agent and session untouched", &[
        sc(&dispose::DISPOSED_LISTENER_PANICS, &dispose::LISTENERS_PANIC_NO_TURN),
        sc(&owner_drain::DISPOSE_WITH_OWNED_JOB, &owner_drain::KILLED_BY_DRAIN),
        op(Dispose, "Dispose", D5_KEEPS_ENTRY),
    ]),
    clause(D6, 1, "after dispose began, no queued prompt starts", &[
        sc(&dispose::DISPOSE_MID_TURN, &dispose::TAIL_CLEARED),
        op(Agent, "Dispose", D6_NO_PROMPT_STARTS),
    ]),
    clause(D7, 1, "agents created from configuration run with no handle; unloading the provider's scope disposes them (D1-D3 hold)", &[
        sc(&dispose::PROVIDER_UNLOAD, &dispose::UNLOAD_MID_TURN),
        op(Dispose, "UnloadProvider", D7_PROVIDER_UNLOAD),
    ]),
    clause(D8, 1, "a dropped dispose: the teardown belongs to the effect, not to the first caller's future; it runs to completion, and a later dispose or unload resolves", &[
        sc(&dropped_dispose::DROPPED_DISPOSE, &dropped_dispose::DROPPED_MID_TEARDOWN),
        op(Dispose, "DropDispose", D8_DROPPED),
    ]),
    clause(D8, 2, "a dropped scope unload wedges, skips or repeats no step; a later unload resolves", &[
        op_only(Dispose, "DropUnloadOwner"),
    ]),
    clause(D8, 3, "a dropped create or resume either publishes nothing or is fully disposed (R1-R3 hold)", &[
        sc(&dropped_create::DROPPED_CREATE, &dropped_create::DROPPED_DURING_SETUP),
        sc(&dropped_create::DROPPED_CREATE, &dropped_create::RESUME_DROPPED),
    ]),
    clause(D8, 4, "a dropped when_idle holds up nothing: a later waiter resolves and the agent stops", &[
        sc(&idle::DROPPED_WHEN_IDLE, &idle::WAITER_DROPPED_MID_TURN),
    ]),
    clause(D8, 5, "a dropped session/new or session/load publishes nothing or is fully disposed, and the id stays usable", &[
        op_only(Acp, "DropNew"),
        op_only(Acp, "DropLoad"),
    ]),
    clause(D8, 6, "a dropped session/prompt wedges nothing: the session takes its next prompt", &[
        op_only(Acp, "DropPrompt"),
    ]),
    clause(D8, 7, "a dropped disconnect or bridge unload: the one quiesce runs to completion and a later close resolves", &[
        sc(&dropped_unload::DROPPED_UNLOAD, &dropped_unload::DROPPED_MID_TEARDOWN),
        op_only(Acp, "DropClose"),
    ]),
    clause(D9, 1, "after a crash at any point, load yields a prefix of what was appended that includes everything flushed", &[
        sc(&crash::CRASH_MID_TURN, &crash::ABORTED_BEFORE_DELIVERY),
        op(Durability, "Crash", D9_SYNCED_SURVIVES),
    ]),
    clause(D9, 2, "a torn last record is truncated, never appended onto", &[
        sc(&crash::CRASH_MID_TURN, &crash::ABORTED_BEFORE_DELIVERY),
        op(Durability, "Load", D9_TORN_TAIL),
    ]),
    clause(D9, 3, "a turn whose turn/start is durable but whose turn/end is not is closed with turn/end {interrupted} when the session is loaded", &[
        sc(&crash::CRASH_MID_TURN, &crash::ABORTED_BEFORE_DELIVERY),
        op(Durability, "Load", D9_NO_OPEN_TURN),
    ]),
    clause(D9, 4, "write-ahead: a turn's turn/start and user/message are flushed before its first step runs", &[
        sc(&storage_error::STORAGE_ERROR_MID_TURN, &storage_error::WRITE_AHEAD),
        op(Durability, "Step", D9_WRITE_AHEAD),
    ]),
    clause(D9, 5, "each step's result is flushed before it is sent to a client: nothing a client saw is lost", &[
        sc(&crash::CRASH_MID_TURN, &crash::ABORTED_AFTER_DELIVERY),
        op(Durability, "Deliver", D9_SHOWN_IS_DURABLE),
        test("acp_server", "sigkill_at_twenty_points_loses_nothing_the_client_saw"),
    ]),
    clause(D10, 1, "a failed write or fsync makes append or flush fail", &[
        sc(&storage_error::STORAGE_ERROR_MID_TURN, &storage_error::WRITE_AHEAD),
        sc(&storage_error::STORAGE_ERROR_MID_TURN, &storage_error::SYNC),
        op(Durability, "DiskFails", D10_NOTHING_UNTIL_REPAIRED),
    ]),
    clause(D10, 2, "the turn ends {failed} with the error, and the ACP prompt answers an error", &[
        sc(&storage_error::STORAGE_ERROR_MID_TURN, &storage_error::STEP),
        op_only(Acp, "PromptOnFailingDisk"),
    ]),
    clause(D10, 3, "the session refuses further appends until it is recovered", &[
        sc(&storage_error::STORAGE_ERROR_MID_TURN, &storage_error::WRITE_AHEAD),
        op(Durability, "DiskFails", D10_NOTHING_UNTIL_REPAIRED),
    ]),
    clause(D10, 4, "the next prompt, or a session/load in the same process, re-opens the log, repairs it and continues: a transient error never leaves a session unusable while its process runs", &[
        sc(&storage_error::STORAGE_ERROR_MID_TURN, &storage_error::WRITE_AHEAD),
        test("acp_storage", "d10_a_transient_write_error_fails_one_prompt_and_the_next_recovers"),
        test("acp_storage", "d10_a_load_in_the_same_process_recovers_a_failed_session"),
    ]),
    // Identity.
    clause(R1, 1, "at any moment at most one live agent and one live session per id", &[
        sc(&identity::SAME_ID_CREATE_RACE, &identity::LOSER_REFUSED_AT_ENTER),
        sc(&identity::SAME_ID_VS_TEARDOWN, &identity::CREATE_BETWEEN_2_3),
        op(Dispose, "CreateRace", R1_ONE),
    ]),
    clause(R1, 2, "of concurrent same-id create/resume calls exactly one publishes; every loser fails with an `already exists` error", &[
        sc(&identity::SAME_ID_CREATE_RACE, &identity::LOSER_REFUSED_AT_PREPARE),
        sc(&dispose_during_load::DISPOSE_DURING_LOAD, &dispose_during_load::LOAD_REFUSED_WHILE_LIVE),
        op(Dispose, "CreateRace", R1_LOSER_FAILS),
    ]),
    clause(R1, 3, "a loser rolls its private state back: no session, agent, scope or hook left", &[
        sc(&identity::SAME_ID_CREATE_RACE, &identity::LOSER_REFUSED_AT_ENTER),
        op(Dispose, "CreateRace", R1_ONE),
    ]),
    clause(R2, 1, "an id becomes reusable exactly when its registry entry detaches", &[
        sc(&identity::ID_REUSE_AFTER_DETACH, &identity::REUSE_DURING_TEARDOWN),
        sc(&identity::SAME_ID_VS_TEARDOWN, &identity::CREATE_BETWEEN_3_4),
        op(Dispose, "Create", R2_REUSE_ON_DETACH),
    ]),
    clause(R2, 2, "a stale or repeated detach never removes a newer entry with the same id", &[
        sc(&identity::ID_REUSE_AFTER_DETACH, &identity::REUSE_DURING_TEARDOWN),
        sc(&identity::SAME_ID_VS_TEARDOWN, &identity::CREATE_BETWEEN_4_5),
    ]),
    clause(R3, 1, "a creation whose owner unloads during setup publishes nothing", &[
        sc(&identity::CREATE_DURING_OWNER_UNLOAD, &identity::UNLOAD_BEFORE_PUBLICATION),
        op(Dispose, "CreateDuringOwnerUnload", R3_NOTHING_AFTER_UNLOAD),
    ]),
    clause(R3, 2, "and releases its id", &[
        sc(&identity::CREATE_DURING_OWNER_UNLOAD, &identity::UNLOAD_BEFORE_PUBLICATION),
        op(Dispose, "CreateDuringOwnerUnload", R3_FAILED_LEAVES_NOTHING),
    ]),
    // Shell ownership.
    clause(S1, 1, "a background job started through tool-bash for agent A has owner_of(job) == Some(A.id)", &[
        sc(&shell::TOOL_BASH_RELOAD, &shell::RELOAD_AFTER_CHECKS),
        op(Shell, "Bash", S1_OWNED),
    ]),
    clause(S2, 1, "bash_output/bash_kill from a caller whose token differs from the owner fail `task <job> belongs to another session`; nothing is read, nothing is killed", &[
        sc(&shell::TOOL_BASH_RELOAD, &shell::RELOAD_AFTER_CHECKS),
        op(Shell, "Output", S2_OTHER),
        op(Shell, "Kill", S2_OTHER),
    ]),
    clause(S2, 2, "a caller with no agent is rejected on an owned job", &[
        sc(&shell::TOOL_BASH_RELOAD, &shell::RELOAD_AFTER_CHECKS),
        op(Shell, "Output", S2_OTHER),
    ]),
    clause(S2, 3, "an unknown job fails with `unknown bash task \"<job>\"`", &[
        sc(&shell::TOOL_BASH_RELOAD, &shell::RELOAD_AFTER_CHECKS),
        op_only(Shell, "Kill"),
    ]),
    clause(S3, 1, "an empty-string token is a real owner", &[
        sc(&shell::TOOL_BASH_RELOAD, &shell::RELOAD_AFTER_CHECKS),
        op(Shell, "Bash", S3_EMPTY_TOKEN),
    ]),
    clause(S3, 2, "an unowned job (None) is open to every caller", &[
        sc(&shell::TOOL_BASH_RELOAD, &shell::RELOAD_AFTER_CHECKS),
        op(Shell, "Output", S3_EMPTY_TOKEN),
    ]),
    clause(S4, 1, "the owner keeps access after the job finished; others stay rejected", &[
        sc(&shell::TOOL_BASH_RELOAD, &shell::RELOAD_BETWEEN_CHECKS),
        op(Shell, "Finish", S4_OWNER_KEEPS_ACCESS),
    ]),
    clause(S5, 1, "unloading and reloading tool-bash at any moment does not change S1-S4 for existing jobs", &[
        sc(&shell::TOOL_BASH_RELOAD, &shell::RELOAD_BETWEEN_CHECKS),
        op(Shell, "Load", S5_RELOAD_KEEPS_FENCES),
    ]),
    clause(S6, 1, "a completion notice reaches only the live agent whose id equals the owner", &[
        sc(&shell::COMPLETION_NOTICE_ROUTING, &shell::NOTICE_DELIVERED),
        op(Shell, "Finish", S6_ONLY),
    ]),
    clause(S6, 2, "with no such agent the notice is dropped", &[
        sc(&shell::COMPLETION_NOTICE_ROUTING, &shell::NOTICE_DROPPED),
        op(Shell, "DisposeA", S6_ONLY),
    ]),
    clause(S6, 3, "a completion that lands while tool-bash is unloaded may lose that one notice; nothing else is lost", &[
        sc(&shell::COMPLETION_NOTICE_ROUTING, &shell::COMPLETION_IN_RELOAD_GAP),
        op(Shell, "Unload", S6_EVERY_JOB_FINISHES),
    ]),
    clause(S7, 1, "disposing an agent kills every live background job it owns (the whole process group), awaits their settlement and drops their records", &[
        sc(&owner_drain::DISPOSE_WITH_OWNED_JOB, &owner_drain::KILLED_BY_DRAIN),
        op(Shell, "DisposeA", S7_KILLED_AND_FORGOTTEN),
        test("real_shell", "s7_drain_kills_the_process_group_and_forgets_the_job"),
    ]),
    clause(S7, 2, "afterwards no caller can read or kill them (`unknown bash task`), a later agent with the same id included", &[
        sc(&owner_drain::DISPOSE_WITH_OWNED_JOB, &owner_drain::KILL_RACING_DRAIN),
        sc(&owner_drain::DISPOSE_WITH_OWNED_JOB, &owner_drain::EXITED_BEFORE_DRAIN),
        op(Shell, "Output", S7_KILLED_AND_FORGOTTEN),
    ]),
    // ACP bridge.
    clause(A1, 1, "after a client disconnect or the bridge's unload, no registered agent and no session-store entry remains for any bridge-owned session", &[
        sc(&acp::DISCONNECT_RACING_NEW, &acp::DISCONNECT_RACING_NEW_CLOSE_AFTER_PUBLICATION),
        sc(&acp::DISCONNECT_DURING_LOAD, &acp::DISCONNECT_DURING_LOAD_CLOSE_AFTER_PUBLICATION),
        op(Acp, "Close", A1_NONE),
    ]),
    clause(A1, 2, "including a session/new or session/load that was in flight when the connection closed", &[
        sc(&acp::DISCONNECT_RACING_NEW, &acp::CLOSE_BETWEEN_CREATION_AND_PUBLICATION),
        sc(&acp::DISCONNECT_DURING_LOAD, &acp::CLOSE_DURING_RESUME),
        op(Acp, "NewRacingClose", A1_NONE),
        op(Acp, "LoadRacingClose", A1_NONE),
    ]),
    clause(A2, 1, "session/cancel maps to cancel(user)", &[
        sc(&acp::SESSION_CANCEL_BEFORE_START, &acp::CANCEL_DURING_TURN),
        op(Acp, "PromptThenCancel", A2_CANCELLED_NEVER_RUNS),
    ]),
    clause(A2, 2, "sent before a queued prompt starts, that prompt never runs and its session/prompt answers cancelled", &[
        sc(&acp::SESSION_CANCEL_BEFORE_START, &acp::CANCEL_BEFORE_START),
        op(Acp, "PromptThenCancel", A2_CANCELLED_NEVER_RUNS),
    ]),
    clause(A2, 3, "a later prompt runs", &[
        sc(&acp::SESSION_CANCEL_BEFORE_START, &acp::CANCEL_BEFORE_START),
        op(Acp, "Prompt", A2_CANCELLED_NEVER_RUNS),
    ]),
    clause(A3, 1, "session/cancel for an unknown session is a no-op", &[
        sc(&acp::SESSION_CANCEL_BEFORE_START, &acp::CANCEL_DURING_TURN),
        op_only(Acp, "CancelUnknown"),
    ]),
    clause(A4, 1, "a disconnect during a prompt answers that prompt cancelled", &[
        sc(&acp::DISCONNECT_MID_PROMPT, &acp::DISCONNECT_DURING_PROMPT),
        op(Acp, "PromptThenClose", A4_DISPOSED_ANSWERS_CANCELLED),
    ]),
    clause(A4, 2, "and disposes the session, its turn/end durable (D3)", &[
        sc(&acp::DISCONNECT_MID_PROMPT, &acp::DISCONNECT_DURING_PROMPT),
        sc(&dropped_unload::DROPPED_UNLOAD, &dropped_unload::DROPPED_MID_TEARDOWN),
        op(Acp, "PromptThenClose", A4_DISPOSED_ANSWERS_CANCELLED),
    ]),
    clause(A5, 1, "session/load of an id that is live fails with `already loaded`", &[
        sc(&dispose_during_load::DISPOSE_DURING_LOAD, &dispose_during_load::LOAD_REFUSED_WHILE_LIVE),
        op(Acp, "Load", A5_NEVER_LOADED_TWICE),
    ]),
    clause(A5, 2, "session/load of an id that is being loaded fails with `already loaded`", &[
        sc(&acp::DUPLICATE_LOAD, &acp::REFUSED_WHILE_LOADING),
    ]),
    clause(A6, 1, "disconnect and unload racing each other share one teardown", &[
        sc(&dropped_unload::DROPPED_UNLOAD, &dropped_unload::DROPPED_MID_TEARDOWN),
        op(Acp, "Close", A6_ONE_QUIESCE),
    ]),
    clause(A7, 1, "after close, session/new fails (`connection closed during session/new` or `bridge has been disposed`) and creates nothing", &[
        sc(&acp::DISCONNECT_RACING_NEW, &acp::CLOSE_BEFORE_NEW),
        sc(&acp::DISCONNECT_RACING_NEW, &acp::CLOSE_BETWEEN_CREATION_AND_PUBLICATION),
        op(Acp, "New", A7_NEW_AFTER_CLOSE),
    ]),
    clause(A8, 1, "one prompt in flight per session; a second fails with a clear error", &[
        sc(&acp::DISCONNECT_MID_PROMPT, &acp::DISCONNECT_DURING_PROMPT),
        op(Acp, "PromptTwice", A8_ONE_IN_FLIGHT),
    ]),
    clause(A8, 2, "a prompt sent after session/cancel waits for the cancelled prompt's answer, then runs; a cancel that arrives while it waits cancels it too: it never runs and answers cancelled", &[
        test("acp_races", "a8_a_cancel_reaches_a_prompt_waiting_behind_a_cancelled_one"),
        test("generated", "m27_is_found_with_no_scenario_written_for_it"),
    ]),
    clause(A9, 1, "session/load replays the stored history to the client as session/update notifications before it answers", &[
        test("acp_server", "load_replays_the_history_before_answering"),
    ]),
    clause(A9, 2, "loading an id with no durable log fails with a not-found error and creates nothing", &[
        test("acp_sessions", "a9_an_id_of_any_length_is_served_and_nothing_is_created_for_an_unknown_one"),
    ]),
    clause(A9, 3, "session ids are never reused, even across processes that share a sessions directory", &[
        test("acp_server", "session_ids_are_unique_across_processes"),
    ]),
    clause(A9, 4, "only one process at a time writes a session's log; a second process gets a clear error", &[
        test("acp_sessions", "a9_one_process_at_a_time_writes_a_session_log"),
    ]),
    clause(A9, 5, "a prompt for a session whose load has not been answered waits for that answer; its updates never appear inside the replay", &[
        test("acp_races", "a9_a_prompt_sent_during_a_load_waits_for_its_answer"),
        test("generated", "m28_is_found_with_no_scenario_written_for_it"),
    ]),
    clause(A10, 1, "invalid UTF-8, a line longer than the documented limit, or any malformed message gets a JSON-RPC error, and the connection keeps serving", &[
        test("acp_hostile", "hostile_lines_are_answered_and_the_server_keeps_serving"),
        test("acp_server", "malformed_json_rpc_gets_an_error_not_a_crash"),
    ]),
    clause(A10, 2, "memory per connection is bounded: the output kept per job is capped, and journals do not grow without limit", &[
        test("shell_limits", "a10_output_cap_bounds_memory"),
        test("acp_soak", "a10_soak_memory_stays_bounded_over_3000_prompts"),
        test("acp_sessions", "a10_a_log_that_is_not_a_regular_file_is_refused_without_blocking"),
        test("acp_sessions", "a10_sessions_per_connection_are_capped_until_one_closes"),
        test("shell_limits", "a10_finished_job_records_are_bounded_per_owner"),
    ]),
    clause(A10, 3, "after stdin closes, the server exits within a documented grace period and leaves no process behind, even with a hung step or a background job that has children", &[
        test("acp_processes", "a10_disconnect_leaves_no_process_of_any_session"),
    ]),
    clause(A10, 4, "if the server itself is killed, its children die with it", &[
        test("acp_processes", "a10_sigkill_of_the_server_leaves_no_process_of_any_session"),
    ]),
    clause(A10, 5, "SIGTERM and SIGINT get the same orderly exit as stdin closing: prompts in flight answer cancelled while stdout is open, turns end disposed", &[
        test("acp_interrupt", "a10_sigterm_and_sigint_answer_the_prompt_in_flight_and_exit_in_order"),
        test("acp_interrupt", "a10_a_prompt_in_flight_at_stdin_close_is_answered_cancelled"),
    ]),
    clause(A10, 6, "a client that stops reading cannot grow the server: outbound messages are bounded and reading stops while they are full; the grace period holds with stdout blocked", &[
        test("acp_soak", "a10_soak_a_client_that_stops_reading"),
        test("acp_interrupt", "a10_the_grace_period_holds_with_stdout_blocked"),
    ]),
    clause(A10, 7, "resources per session are bounded: finished jobs' output has a per-session cap, loading streams the log, running out of descriptors fails only the request that needed one", &[
        test("acp_soak", "a10_soak_100_finished_1mb_jobs"),
        test("acp_soak", "a10_soak_a_400_mb_log_loads"),
        test("acp_soak", "a10_soak_1000_sessions_under_a_soft_descriptor_limit_of_256"),
        test("acp_soak", "a10_soak_descriptor_exhaustion_fails_only_the_request_that_needed_one"),
    ]),
    clause(A10, 8, "every error answers with the request's id whenever the id can be read", &[
        test("acp_hostile", "hostile_lines_are_answered_and_the_server_keeps_serving"),
    ]),
    clause(A10, 9, "no process a session's command started outlives the session's disposal or the server: not one left in the job's group after the job's own process exited (cmd &, nohup), nor one that made its own group (set -m) or session (setsid)", &[
        test("acp_processes", "no_descendant_survives"),
    ]),
    clause(A11, 1, "a background job's start and completion reach the client as tool_call / tool_call_update notifications of its session, inside a turn or between turns, never inside another prompt's message stream, and a load replays them in the same form, never as user text", &[
        test("acp_jobs", "a11_jobs_are_tool_calls_between_turns_across_a_turn_and_after_a_load"),
    ]),
    clause(A11, 2, "log contents, such as a job number in output, never change how later jobs are numbered", &[
        test("acp_jobs", "a11_a_job_number_in_output_does_not_poison_numbering"),
    ]),
    clause(A11, 3, "a completion that could not be stored (a storage error) still reaches the client, once, and the session's log records it once storage works again", &[
        test("acp_jobs", "a11_a_job_that_ends_while_the_disk_is_full_reaches_the_client_and_the_log_later"),
    ]),
];
