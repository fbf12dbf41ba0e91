import DigestTesting
import Foundation
import Testing

/// `digest send --credentials metadata` as a process, against a fake metadata server and a fake FCM
/// server on loopback (`GCE_METADATA_HOST`).
@Suite struct MetadataSendTests {
    /// An outbox of `count` messages, a fake FCM server and a metadata server whose tokens it accepts.
    static func setUp(count: Int) async throws -> (TemporaryDirectory, String, FakeFCMServer, FakeMetadataServer) {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: count)
        let fcm = try await FakeFCMServer.start()
        let metadata = try await FakeMetadataServer.start(projectID: fcm.projectID) { fcm.registerAccessToken($0, lifetime: $1) }
        return (dir, db, fcm, metadata)
    }

    static func send(_ db: String, _ fcm: FakeFCMServer, metadataHost: String, _ extra: [String] = [], credentials: [String] = ["--credentials", "metadata"],
                     environment: [String: String?] = [:]) async throws -> DigestBinary.Output {
        try await DigestBinary.run(
            ["send", "--db", db, "--endpoint", fcm.url, "--drain"] + credentials + extra,
            environment: ["GCE_METADATA_HOST": metadataHost, "DIGEST_CREDENTIALS": nil, "GOOGLE_APPLICATION_CREDENTIALS": nil].merging(environment) { $1 })
    }

    @Test func sendsWithTheMetadataServersTokenForItsProject() async throws {
        let (dir, db, fcm, metadata) = try await Self.setUp(count: 40)
        defer { withExtendedLifetime(dir) {} }
        let output = try await Self.send(db, fcm, metadataHost: metadata.host)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("for project digest-test") && output.stdout.contains("with the default service account of the metadata server at \(metadata.host)"),
                "\(output.stdout)")
        #expect(try OutboxFixture.states(path: db) == ["sent": 40])
        #expect(fcm.stats.answers == ["200": 40])
        #expect(metadata.stats.projectRequests == 1 && metadata.stats.tokenRequests == 1 && metadata.stats.unflavored == 0)
        try await fcm.shutdown()
        try await metadata.shutdown()
    }

    @Test func projectAndEnvironmentChooseWithoutAsking() async throws {
        let (dir, db, fcm, metadata) = try await Self.setUp(count: 10)
        defer { withExtendedLifetime(dir) {} }
        // DIGEST_CREDENTIALS=metadata asks too; --project is not looked up, and FCM refuses another project.
        let output = try await Self.send(db, fcm, metadataHost: metadata.host, ["--project", "someone-else"], credentials: [],
                                   environment: ["DIGEST_CREDENTIALS": "metadata"])
        #expect(output.status == 78, "\(output.stderr)")
        #expect(output.stderr.contains("the default service account of the metadata server at \(metadata.host) may not send messages for the project someone-else"),
                "\(output.stderr)")
        #expect(metadata.stats.projectRequests == 0 && metadata.stats.tokenRequests == 1)
        #expect(try OutboxFixture.states(path: db) == ["ready": 10])
        // GOOGLE_APPLICATION_CREDENTIALS is a path only: `metadata` there is a file that is not there.
        let file = try await Self.send(db, fcm, metadataHost: metadata.host, credentials: [], environment: ["GOOGLE_APPLICATION_CREDENTIALS": "metadata"])
        #expect(file.status == 78 && file.stderr.contains("cannot read the service-account file"), "\(file.stderr)")
        try await fcm.shutdown()
        try await metadata.shutdown()
    }

    @Test func exitStatusesSayWhetherARestartCanHelp() async throws {
        let (dir, db, fcm, metadata) = try await Self.setUp(count: 10)
        defer { withExtendedLifetime(dir) {} }
        // Nothing listens: 78 at the first try.
        let closed = try await FakeMetadataServer.start()
        let closedHost = closed.host
        try await closed.shutdown()
        let absent = try await Self.send(db, fcm, metadataHost: closedHost)
        #expect(absent.status == 78 && absent.stderr.contains("no metadata server answers at \(closedHost)"), "\(absent.stderr)")
        // No service account on the machine: 78, asked once.
        metadata.scriptTokenAnswers([], then: .status(404))
        let noAccount = try await Self.send(db, fcm, metadataHost: metadata.host)
        #expect(noAccount.status == 78 && noAccount.stderr.contains("no default service account"), "\(noAccount.stderr)")
        #expect(metadata.stats.tokenRequests == 1)
        // There but failing: retried, then 75.
        metadata.scriptTokenAnswers([], then: .status(503))
        let failing = try await Self.send(db, fcm, metadataHost: metadata.host)
        #expect(failing.status == 75 && failing.stderr.contains("HTTP 503"), "\(failing.stderr)")
        #expect(metadata.stats.tokenRequests == 1 + 4)
        #expect(try OutboxFixture.states(path: db) == ["ready": 10])
        #expect(fcm.stats.requests == 0)
        try await fcm.shutdown()
        try await metadata.shutdown()
    }
}
