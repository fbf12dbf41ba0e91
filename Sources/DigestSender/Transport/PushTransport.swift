import DigestCore
import CoreMetrics
import DigestNIO
import DigestStore
import NIOCore

/// A provider as the sender sees it: lanes (connections) that carry a number of requests each, and a
/// way to try one outbox row on one of them. A transport turns the row into its provider's request
/// and the provider's answer into a ``PushOutcome``; everything else (what to lease, when to send,
/// retries, settling, stopping) is ``SenderStateMachine``'s, the same for every provider, run by
/// ``PushSender``.
///
/// A new provider is a transport (its settings, its request, its table of answers, its credentials,
/// and the ``PushSender`` initializer that makes it), an encoder in DigestCore, its options in the
/// command line, a fake server and its docs.
///
/// A transport retries on its own only what the provider did not process (a stream refused or past
/// a GOAWAY's last stream) and what its credentials need (a refreshed token); any other failure is an
/// outcome.
protocol PushTransport: Sendable {
    /// The provider whose rows this transport sends: the only ones its sender leases.
    var provider: Provider { get }

    /// Its counters and timers, labelled with its provider.
    var metrics: SenderMetrics { get }

    /// A dry run: every message is checked by the provider, none delivered, nothing settled.
    var validateOnly: Bool { get }

    /// Whether the provider's dead-token answer may mean the wrong endpoint (APNs' environments):
    /// nil when it cannot.
    var environmentCheck: SenderStateMachine<ContinuousClock.Instant>.EnvironmentCheck? { get }

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

/// What every transport takes from its sender's ``PushSender/Configuration``.
struct TransportTiming: Sendable {
    /// One request's deadline, from when it is written.
    let requestTimeout: TimeAmount
    /// What reads a `Retry-After` (scaled by its time scale).
    let retry: RetryPolicy
    /// The sender's clock in Unix seconds: retry times, token times, expiry.
    let clock: @Sendable () -> Int64

    init<Database>(_ configuration: PushSender<Database>.Configuration) {
        requestTimeout = configuration.requestTimeout
        retry = configuration.retry
        clock = configuration.clock
    }
}

extension HTTP2Exchange {
    /// Refused requests posted again in a row before the refusal counts as a failed try.
    static var maxRefusals: Int { 8 }

    /// Posts `outgoing`, and again at once while the server refuses it unprocessed (past a GOAWAY's
    /// last stream, REFUSED_STREAM: it did nothing with it, so it is no try), `maxRefusals` times at
    /// most over the caller's `refusals` for this message. Any other failure without an answer may have
    /// been delivered: it comes back as the retry's `NETWORK` reason.
    func post(
        _ outgoing: Outgoing, on eventLoop: any EventLoop, timeout: TimeAmount, refusals: inout Int, refused: Counter
    ) async -> Result<Answer, PushOutcome.Failure> {
        while true {
            do {
                return .success(try await post(outgoing, on: eventLoop, timeout: timeout))
            } catch where Self.wasRefused(error) && refusals < Self.maxRefusals {
                refusals += 1
                refused.increment()
            } catch let refusal as PushAddressNotAllowed {
                return .failure(.init(code: PushAddressNotAllowed.code, detail: refusal.description))
            } catch {
                return .failure(.init(code: "NETWORK", detail: String(describing: error).prefix(200).description))
            }
        }
    }
}
