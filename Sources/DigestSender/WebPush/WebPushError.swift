/// Why one Web Push message cannot be made for one subscription: its keys or endpoint are unusable,
/// or the plaintext does not fit one record. About that message only, never the sender's setup.
///
/// Never carries a key or a whole endpoint.
package struct WebPushError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure; compare with the static members.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String { case payloadTooLarge, endpoint }
        private let value: Value

        /// The plaintext is over ``WebPushEncryption/maxPlaintextBytes``.
        package static let payloadTooLarge = Code(value: .payloadTooLarge)
        /// The endpoint is not an `https` URL with a host.
        package static let endpoint = Code(value: .endpoint)

        package var description: String { value.rawValue }
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}
