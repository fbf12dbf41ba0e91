/// What one try of one message came to, in words every provider's answers fit: a transport reads its
/// provider's answer into one of these (FCM: ``FCMResponse``), and ``SenderStateMachine`` decides
/// from it alone what the outbox records.
enum PushOutcome: Sendable {
    /// Why a try failed: the provider's error code (`NETWORK` when no answer came) and its message.
    struct Failure: Error, Sendable, Hashable {
        var code: String
        var detail: String

        /// `CODE: detail`, as the outbox's `last_error` starts.
        var reason: String { "\(code): \(detail)" }
    }

    /// Accepted; `receipt` is the provider's id for the message (FCM's message name).
    case sent(receipt: String)
    /// Failed for now: try again no sooner than `after` (the provider's `Retry-After`, or its rule's
    /// minimum, already scaled; nil: the backoff alone decides). `pauseEverything`: the provider asked
    /// the whole sender to send nothing for that long (FCM's 429 with `Retry-After`).
    case retry(after: Duration?, Failure, pauseEverything: Duration? = nil)
    /// The device token is dead: the message is dead and the token remembered as dead since `diedAt`
    /// (Unix seconds; nil: now — APNs' 410 says since when, and a device registered after that stays
    /// alive). `suspectEnvironment`: the token may only be for the provider's other environment (APNs'
    /// `BadDeviceToken`: sandbox against production); ``SenderStateMachine`` then holds the outcome back
    /// until the run's first answers tell a wrong endpoint from dead devices. FCM never says so.
    case deviceDead(Failure, diedAt: Int64? = nil, suspectEnvironment: Bool = false)
    /// This message can never be delivered (a bad payload); the device stays.
    case messageDead(Failure)
    /// The provider or the credentials source refused this sender: no retry helps, stop everything.
    case credentialsRefused(SenderError)
    /// Not tried, and not to be tried for now: the message goes back untried, not due before `for`
    /// from now, with the failure as its last error (Web Push: a host the sender may not contact, an
    /// origin that refuses the sender's key). The rest of the run goes on.
    case postponed(Failure, for: Duration)
}
