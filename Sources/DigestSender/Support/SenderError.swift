/// Why the sender stopped: a code, a human message, and what it concerns (a file, a URL, a message id).
///
/// Never carries a device token.
public struct SenderError: Error, CustomStringConvertible, Sendable {
    /// The kind of failure; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String { case credentials, authentication, thirdPartyAuth, configuration, store, unavailable }
        private let value: Value

        /// The service-account file is missing, malformed or its key unusable.
        public static let credentials = Code(value: .credentials)
        /// The token endpoint or FCM refused the service account (revoked key, no permission).
        public static let authentication = Code(value: .authentication)
        /// FCM's `THIRD_PARTY_AUTH_ERROR`: the APNs certificate or web push keys are wrong.
        public static let thirdPartyAuth = Code(value: .thirdPartyAuth)
        /// A bad endpoint or option.
        public static let configuration = Code(value: .configuration)
        /// The outbox could not be read or written.
        public static let store = Code(value: .store)
        /// A server the sender needs is there but failing, or the network is down (a token endpoint
        /// or the metadata server): a later try may work.
        public static let unavailable = Code(value: .unavailable)

        public var description: String { value.rawValue }
    }

    public let code: Code
    public let message: String
    /// The file, URL or message the failure is about.
    public let context: String?

    public init(_ code: Code, _ message: String, context: String? = nil) {
        self.code = code
        self.message = message
        self.context = context
    }

    public var description: String {
        context.map { "\($0): \(message)" } ?? message
    }
}
