import DigestCore
import DigestNIO
import DigestStore

/// A provider as the sender sees it: lanes (connections) that carry a number of requests each, and a
/// way to try one outbox row on one of them. A transport turns the row into its provider's request
/// and the provider's answer into a ``PushOutcome``; everything else (what to lease, when to send,
/// retries, settling, stopping) is ``SenderStateMachine``'s, the same for every provider.
///
/// A transport retries on its own only what the provider did not process (a stream refused or past
/// a GOAWAY's last stream) and what its credentials need (a refreshed token); any other failure is an
/// outcome.
protocol PushTransport: Sendable {
    /// The provider whose rows this transport sends: the only ones its sender leases.
    var provider: Provider { get }

    /// Requests each lane carries at once (a connection's streams; 1 over HTTP/1.1).
    var laneCapacities: [Int] { get }

    /// The event loop a lane's requests run on: its message tasks prefer it.
    func executor(ofLane lane: Int) -> EventLoopExecutor

    /// Before anything is leased: fails when the credentials are refused.
    func prepare() async throws

    /// One try of `message` on `lane`; never throws (failures are outcomes).
    func deliver(_ message: LeasedMessage, lane: Int) async -> PushOutcome

    /// Closes the connections once their requests end.
    func close()
}
