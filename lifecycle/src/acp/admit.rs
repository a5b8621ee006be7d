//! How the server admits a request: one poll before the next is read.

/// A request after its admission ([`admit`]).
pub enum Admitted<T> {
    /// Answered in its first poll.
    Answered(T),
    /// Admitted and not answered yet: the caller runs the rest on a task.
    Pending(crate::rt::BoxFuture<T>),
}

/// Admit a request the way the server serves its requests: poll its
/// future once, here, before the next request is read, so whatever it
/// claims or marks in its first lock sections (a prompt's claim or its
/// wait, a load's `loading` mark) is in place for the requests behind it
/// (A2, A8, A9). The generated workloads (`generate`) admit theirs with
/// this too, on every backend.
pub async fn admit<T>(mut request: crate::rt::BoxFuture<T>) -> Admitted<T> {
    match futures::poll!(request.as_mut()) {
        std::task::Poll::Ready(answer) => Admitted::Answered(answer),
        std::task::Poll::Pending => Admitted::Pending(request),
    }
}
