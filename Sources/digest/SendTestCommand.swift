import ArgumentParser
import AsyncHTTPClient
import DigestCore
import DigestImport
import DigestSender
import DigestServer
import DigestStore
import Foundation
import DigestRun
import Logging
import NIOCore
import NIOPosix

/// `digest send-test`: a reader's digest on an editor's own device, now, without the week's run.
struct SendTestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send-test",
        abstract: "Send one reader's digest to an editor's own test device (FCM, APNs or Web Push), outside the outbox.",
        discussion: """
            Takes the reader's message for the week — the outbox's, of the test device's provider and platform, \
            else composed now for that device as a run would — gives it a fresh message_id and "test": "1" in its \
            data (nothing the notification shows), and sends it once to the device named by --to-device in \
            --test-devices FILE (a JSON array: [{"name": "Ana's Pixel", "provider": "fcm", "platform": "android", \
            "token": "…"}], a Web Push device with "subscription" instead of "token"), with the credential flags \
            of `digest send`. Nothing is written to the outbox; digest collect takes the device's events and \
            keeps them out of every report. At most 10 test sends a minute per device.
            """)

    @Option(help: "The reader whose digest is sent.") var user: String
    @Option(help: "The ISO week (default: the latest complete week).") var week: String?
    @Option(name: .customLong("to-device"), help: "The test device's name, as in --test-devices.") var toDevice: String
    @Option(help: ArgumentHelp("The test devices: a JSON array of {name, provider, platform, token | subscription}.", valueName: "FILE"))
    var testDevices: String
    @OptionGroup var plan: PlanOptions
    /// `digest send`'s flags: the store (`--db`), the credentials and endpoints of each provider.
    @OptionGroup var sender: SendCommand

    /// Test sends a minute per device.
    static let perMinute = 10

    func validate() throws {
        if let week { _ = try ISOWeek(parsing: week) }
    }

    func run() async throws {
        let device = try TestDevices.load(testDevices).named(toDevice)
        let week = try self.week.map { try ISOWeek(parsing: $0) } ?? WeekCalendar.latestCompleteWeek(now: Date())
        let templates = try plan.catalog(), configuration = try plan.configuration(week: week).compose
        let sent = try await sender.database.withStore { database in
            try await sender.providers.testSend(
                to: device, user: user, week: week, database: database, templates: templates, configuration: configuration,
                perMinute: Self.perMinute)
        }
        let source = sent.message.fromOutbox ? "the outbox's \(week) message" : "composed now for \(week)"
        print("sent to \(device.name) (\(device.device.provider.rawValue), \(device.device.platform.rawValue)): \(user)'s digest, \(source), \(sent.message.variant)")
        print("message_id: \(sent.message.messageID) (a test: its events stay out of every report)")
        if !sent.receipt.isEmpty { print("receipt: \(sent.receipt)") }
    }
}

/// The test devices file: a JSON array of `{"name", "provider", "platform", "token"}`, a Web Push
/// device with `"subscription"` (what `PushSubscription.toJSON()` gives) instead of `"token"`.
struct TestDevices {
    typealias Entry = DeviceList.Entry

    var entries: [Entry]

    /// The largest file read: a team's phones, not a user export.
    static let maxFileBytes = 1 << 20

    /// The file at `path`, each device read and checked as `digest import` reads a user's device
    /// (``DeviceList``): a bad token, endpoint, keys or topic is an error naming the entry.
    static func load(_ path: String) throws -> TestDevices {
        let data: Data
        do {
            let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? file.close() }
            data = try file.read(upToCount: maxFileBytes + 1) ?? Data()
        } catch {
            throw CommandError("--test-devices \(path): cannot read: \(error.localizedDescription)")
        }
        guard data.count <= maxFileBytes else {
            throw CommandError("--test-devices \(path): over the limit of \(maxFileBytes) bytes for a list of test devices")
        }
        do { return TestDevices(entries: try DeviceList.entries(Array(data))) } catch {
            throw CommandError("--test-devices \(path)\(error.reason.hasPrefix("[") ? "" : ": ")\(error.reason)")
        }
    }

    func named(_ name: String) throws -> Entry {
        guard let entry = entries.first(where: { $0.name == name }) else {
            throw TestSendError(.unknownDevice, "no test device named \(name) (there are: \(entries.map(\.name).joined(separator: ", ")))")
        }
        return entry
    }
}

/// The message a test send delivers: the reader's message of the device's provider and platform (the
/// outbox's, else composed now for the device), readdressed to the device with a fresh message id and
/// `"test": "1"` in its data.
struct TestMessage {
    var leased: LeasedMessage
    var messageID: String
    var variant: String
    var fromOutbox: Bool

    static func make<Database: DigestDatabase>(
        for device: Device, name: String, user: String, week: ISOWeek, database: Database, templates: TemplateCatalog,
        configuration: BatchComposer.Configuration, now: Int64
    ) async throws -> TestMessage {
        let messageID = OutboxMessage.messageID(dedupeKey: "test:\(name):\(now):\(UUID().uuidString)")
        let rows = try await database.outboxRows(week: week.description, userID: user)
        if let row = rows.first(where: { $0.provider == device.provider && $0.platform == device.platform }), let oldID = row.messageID {
            return TestMessage(
                leased: readdressed(message: row.message, headers: row.headers, target: row.target, oldID: oldID, to: device, newID: messageID),
                messageID: messageID, variant: row.variant.rawValue, fromOutbox: true)
        }
        let composer = SingleUserComposer(database: database, templates: templates, configuration: configuration)
        guard let composed = try await composer.compose(userID: user, devices: [device], now: Date(timeIntervalSince1970: TimeInterval(now))) else {
            throw TestSendError(.unknownUser, "no user '\(user)'")
        }
        guard let message = composed.messages.first else {
            throw TestSendError(.noMessage, "\(user) has no message for \(week)\(composed.skipped.map { ": \($0.rawValue)" } ?? "")")
        }
        return TestMessage(
            leased: readdressed(
                message: String(decoding: message.message, as: UTF8.self), headers: message.headers, target: message.target, oldID: message.messageID,
                to: device, newID: messageID),
            messageID: messageID, variant: message.variant.rawValue, fromOutbox: false)
    }

    /// The message for `device`: its id replaced (everywhere it appears, the APNs `apns-id` made of
    /// it too), `"test":"1"` first in its data (FCM: each `data` object; APNs and Web Push: the
    /// payload's top level), the FCM token or the Web Push keys the device's.
    static func readdressed(message: String, headers: String?, target: String, oldID: String, to device: Device, newID: String) -> LeasedMessage {
        var body = message.replacingOccurrences(of: oldID, with: newID)
        var rowHeaders = headers
        switch device.provider {
        case .fcm:
            body = body.replacingOccurrences(of: #""token":"\#(target)""#, with: #""token":"\#(device.token)""#)
            body = body.replacingOccurrences(of: #""data":{"#, with: #""data":{"test":"1","#)
        case .apns:
            body = body.hasPrefix("{") ? #"{"test":"1","# + body.dropFirst() : body
            rowHeaders = headers?.replacingOccurrences(of: APNsHeaders.id(messageID: oldID), with: APNsHeaders.id(messageID: newID))
        case .webpush:
            body = body.hasPrefix("{") ? #"{"test":"1","# + body.dropFirst() : body
            if let headers, let keys = device.subscriptionKeys, var read = try? WebPushHeaders(json: Array(headers.utf8)) {
                read.p256dh = keys.p256dh
                read.auth = keys.auth
                rowHeaders = read.json
            }
        }
        return LeasedMessage(
            id: 0, dedupeKey: "test:\(newID)", userID: "test", platform: device.platform.rawValue, message: body, attempts: 1,
            provider: device.provider, target: device.token, headers: rowHeaders)
    }
}

extension ProviderOptions {
    /// A test send (`digest send-test`, `serve`'s "Send to my device"): the reader's message for the
    /// device (``TestMessage``), counted against the device's `perMinute` sends, delivered once with
    /// these credentials. Throws a ``SenderError`` (`.credentials`) without credentials for the
    /// device's provider (before anything is counted) or when they are refused, and a
    /// ``TestSendError`` for an unknown reader, no message, too many sends, or the provider's refusal.
    func testSend<Database: DigestDatabase>(
        to device: TestDevices.Entry, user: String, week: ISOWeek, database: Database, templates: TemplateCatalog,
        configuration: BatchComposer.Configuration, perMinute: Int
    ) async throws -> (message: TestMessage, receipt: String) {
        let provider = device.device.provider
        guard hasCredentials(for: provider) else {
            throw SenderError(.credentials, "a test send to a \(provider.displayName) device needs \(provider.credentialsHint)")
        }
        let now = Int64(Date().timeIntervalSince1970)
        let message = try await TestMessage.make(
            for: device.device, name: device.name, user: user, week: week, database: database, templates: templates,
            configuration: configuration, now: now)
        let send = TestSend(
            messageID: message.messageID, device: device.name, userID: user, week: week.description, provider: provider,
            platform: device.device.platform.rawValue, variant: message.variant)
        guard try await database.recordTestSend(send, now: now, perMinute: perMinute) else {
            throw TestSendError(.tooMany, "\(device.name) had \(perMinute) test sends in the last minute: wait a little")
        }
        switch try await deliverOnce(message.leased, database: database) {
        case .sent(let receipt):
            return (message, receipt)
        case .failed(let code, let reason):
            throw TestSendError(.refused, "\(device.name): \(code): \(reason)")
        }
    }

    /// One message to its provider outside the outbox, with these credentials for that provider;
    /// throws when there are none, or when they are refused.
    private func deliverOnce<Database: DigestDatabase>(_ message: LeasedMessage, database: Database) async throws -> SingleDelivery {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let client = HTTPClient(eventLoopGroupProvider: .shared(loops), configuration: .pushSender(concurrency: 8, caFile: caFile))
        let metadata = credentialsChoice == .metadata && message.provider == .fcm
            ? HTTPClient(eventLoopGroupProvider: .shared(loops), configuration: .metadataServer()) : nil
        let result: Result<SingleDelivery, any Error>
        do {
            result = .success(try await deliverOnce(message, database: database, client: client, metadata: metadata))
        } catch {
            result = .failure(error)
        }
        try? await metadata?.shutdown()
        try? await client.shutdown()
        try? await loops.shutdownGracefully()
        return try result.get()
    }

    private func deliverOnce<Database: DigestDatabase>(
        _ message: LeasedMessage, database: Database, client: HTTPClient, metadata: HTTPClient?
    ) async throws -> SingleDelivery {
        let logger = Logger(label: "digest.send-test")
        func missing() -> SenderError {
            SenderError(.credentials, "a test send to a \(message.provider.displayName) device needs \(message.provider.credentialsHint)")
        }
        switch message.provider {
        case .fcm:
            guard let choice = credentialsChoice else { throw missing() }
            var account: ServiceAccount?
            if case .file(let path) = choice { account = try ServiceAccount(contentsOf: path) }
            let (tokens, projectID) = try await self.tokens(account: account, client: client, metadataClient: metadata, logger: logger)
            var configuration = PushSender<Database>.Configuration()
            configuration.caFile = caFile
            var fcm = FCMTransport.Configuration()
            fcm.endpoint = fcmBaseURL
            let sender = PushSender(
                database: database, fcm: fcm, projectID: projectID, tokens: tokens, client: client, configuration: configuration, logger: logger)
            return try await sender.deliverOnce(message)
        case .apns:
            guard let key = try apnsSigningKey() else { throw missing() }
            var apns = APNsTransport.Configuration()
            apns.endpoint = apnsBaseURL
            apns.topic = apnsTopic
            apns.connections = 1
            var configuration = PushSender<Database>.Configuration()
            configuration.concurrency = 1
            configuration.caFile = caFile
            return try await PushSender(database: database, apns: apns, key: key, client: client, configuration: configuration, logger: logger)
                .deliverOnce(message)
        case .webpush:
            guard let path = vapidKeyFile else { throw missing() }
            var webPush = WebPushTransport.Configuration(subject: vapidSubject ?? "")
            webPush.allowedHosts = allowedPushHosts
            webPush.connectionsPerOrigin = 1
            var configuration = PushSender<Database>.Configuration()
            configuration.concurrency = 1
            configuration.caFile = caFile
            let sender = try PushSender(
                database: database, webPush: webPush, key: try VAPIDKey(contentsOf: path), client: client, configuration: configuration, logger: logger)
            return try await sender.deliverOnce(message)
        }
    }
}
