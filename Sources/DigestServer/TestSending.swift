package import DigestCore
import Hummingbird

/// `serve --test-devices`: the editors' own devices the page can send a reader's digest to, and the
/// way to send to them. This library sends nothing itself: the `digest` command injects ``send``
/// (its `send-test`, with `send`'s credentials), and the server only lists, checks and answers.
///
/// ```swift
/// var configuration = PreviewServer<SQLiteDatabase>.Configuration(port: 8080)
/// configuration.testSending = TestSending(devices: [.init(name: "Ana's Pixel", provider: .fcm, platform: .android, target: "…Xk9Q")]) { request in
///     try await deliver(request)  // a TestSending.Result, or a TestSendError
/// }
/// ```
package struct TestSending: Sendable {
    /// A test device as the page lists it: its token (a Web Push endpoint's path) never whole.
    package struct Device: Sendable, Codable, Equatable {
        /// Its name in the test devices file, which the page sends back.
        package var name: String
        package var provider: Provider
        package var platform: Platform
        /// The token masked as in logs: `…` and its last four characters (an endpoint keeps its origin).
        package var target: String
        /// Why the server cannot send to it (no credentials for its provider), or `nil`.
        package var unavailable: String?

        package init(name: String, provider: Provider, platform: Platform, target: String, unavailable: String? = nil) {
            self.name = name
            self.provider = provider
            self.platform = platform
            self.target = target
            self.unavailable = unavailable
        }
    }

    /// One send the page asked for, with what the page composes with (a reader the outbox holds no
    /// message of for the device is composed now with these, as the page's preview is).
    package struct Request: Sendable {
        package var user: String
        package var week: ISOWeek
        /// The test device's name.
        package var device: String
        /// The templates as the page reads them now.
        package var templates: TemplateCatalog
        /// The run configuration of `week`.
        package var planning: BatchComposer.Configuration
    }

    /// A test send that the provider accepted.
    package struct Result: Sendable, Codable, Equatable {
        /// Where the message came from.
        package enum Source: String, Sendable, Codable {
            /// The outbox's message of the device's provider and platform, readdressed.
            case outbox
            /// Composed now for the device (the outbox holds none).
            case composed
        }

        package var sent = true
        /// The fresh id of the test message (its events stay out of every report).
        package var messageID: String
        package var variant: String
        package var source: Source
        /// The test device's name.
        package var device: String
        /// The provider's id for the message (FCM's message name, the `apns-id`, the push service's `Location`).
        package var receipt: String?

        package init(messageID: String, variant: String, source: Source, device: String, receipt: String?) {
            self.messageID = messageID
            self.variant = variant
            self.source = source
            self.device = device
            self.receipt = receipt
        }

        enum CodingKeys: String, CodingKey {
            case sent, messageID = "message_id", variant, source, device, receipt
        }
    }

    /// What the page lists.
    package var devices: [Device]
    /// Sends a reader's digest to one test device; throws a ``TestSendError`` for what the editor can
    /// act on (any other error answers 500).
    package var send: @Sendable (Request) async throws -> Result

    package init(devices: [Device], send: @escaping @Sendable (Request) async throws -> Result) {
        self.devices = devices
        self.send = send
    }
}

/// Why a test send did not happen, with the message the page shows.
package struct TestSendError: Error, CustomStringConvertible {
    /// What kind of refusal it is (each answers its own HTTP status).
    package struct Code: Sendable, Equatable, CustomStringConvertible {
        private enum Value: String { case unknownDevice, unknownUser, noMessage, tooMany, unavailable, refused }
        private let value: Value

        /// No test device of that name: 404.
        package static let unknownDevice = Code(value: .unknownDevice)
        /// No reader of that id: 404.
        package static let unknownUser = Code(value: .unknownUser)
        /// The reader gets no message that week (opted out, dormant, …): 404.
        package static let noMessage = Code(value: .noMessage)
        /// The device had its test sends of the last minute: 429.
        package static let tooMany = Code(value: .tooMany)
        /// The server has no credentials for the device's provider: 503.
        package static let unavailable = Code(value: .unavailable)
        /// The provider refused the message or the credentials, or could not be reached: 502.
        package static let refused = Code(value: .refused)

        package var description: String { value.rawValue }

        var status: HTTPResponse.Status {
            switch value {
            case .unknownDevice, .unknownUser, .noMessage: .notFound
            case .tooMany: .tooManyRequests
            case .unavailable: .serviceUnavailable
            case .refused: .badGateway
            }
        }
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}
