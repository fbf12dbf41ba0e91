import DigestStore

/// What one try of one message outside the outbox came to (`digest send-test`): nothing is leased,
/// settled or retried; the provider's answer is the result.
public enum SingleDelivery: Sendable, Equatable {
    /// Accepted; `receipt` is the provider's id for it (FCM's message name, the `apns-id`, the push
    /// service's `Location`).
    case sent(receipt: String)
    /// Not accepted, with the provider's code and what it said (or why it was not tried).
    case failed(code: String, reason: String)
}

extension PushTransport {
    /// Tries `message` once on the first lane, after the credentials are ready; a refusal of the
    /// credentials throws, every other failure is the result. The connections are closed after.
    func deliverOnce(_ message: LeasedMessage) async throws -> SingleDelivery {
        defer { close() }
        try await prepare()
        switch await deliver(message, lane: 0) {
        case .sent(let receipt):
            return .sent(receipt: receipt)
        case .retry(_, let failure, _), .deviceDead(let failure, _, _), .messageDead(let failure), .postponed(let failure, _):
            return .failed(code: failure.code, reason: failure.detail)
        case .credentialsRefused(let error):
            throw error
        }
    }
}
