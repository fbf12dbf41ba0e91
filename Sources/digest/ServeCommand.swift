import ArgumentParser
import DigestCore
import DigestImport
import DigestPreview
import DigestRun
import DigestSender
import DigestSQLite
import DigestServer
import DigestStore
import Foundation
import Logging
import NIOCore
import NIOPosix

struct ServeCommand: AsyncParsableCommand, ShutsDownOnSignals {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the editors' preview pages: search a user, pick a week, see every surface.",
        discussion: """
            Listens on 127.0.0.1 unless --host says otherwise; any other address needs a bearer token \
            (--token or DIGEST_SERVE_TOKEN), sent as `Authorization: Bearer TOKEN` or opened as \
            http://HOST:PORT/?token=TOKEN. Without a token, only requests to 127.0.0.1, localhost or [::1] \
            are answered (their Host; 403 otherwise): behind a proxy or under another name, set a token. \
            Templates are read again when a file of theirs changed, so an \
            edit shows on reload; PNGs are cached by message hash. With --test-devices FILE (the JSON array \
            `send-test` takes) and the credential flags of `digest send`, the page gets "Send to my device": \
            the reader's digest to one test device, as `digest send-test` sends it (tokens masked on the page; \
            at most 10 test sends a minute per device).
            """)

    @OptionGroup var database: DatabaseOptions
    @Option(help: "The address to listen on.") var host: String = "127.0.0.1"
    @Option(help: "The port (0: any free port, printed at start).") var port: Int = 8080
    @Option(help: "Bearer token every request must carry (default: DIGEST_SERVE_TOKEN).") var token: String?
    @Option(help: "Pixels per dp/pt of the previews: 1, 2 or 3.") var scale: Int = 3
    @Option(help: "Threads rendering previews.") var renderThreads: Int = 2
    @Option(help: "A templates folder the page compares --templates with: the reader's changed messages, old beside new.")
    var compareTemplates: String?
    @OptionGroup var pictures: PictureOptions
    @OptionGroup var plan: PlanOptions
    @Option(help: ArgumentHelp(
        "The editors' test devices the page's \"Send to my device\" sends to: a JSON array of {name, provider, platform, token | subscription}, as `send-test` takes; with the credential flags of `digest send`.",
        valueName: "FILE"))
    var testDevices: String?
    /// `digest send`'s credentials and endpoints, for the page's test sends.
    @OptionGroup var providers: ProviderOptions

    func validate() throws {
        guard (1...3).contains(scale) else { throw ValidationError("--scale takes 1, 2 or 3") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0…65535") }
        guard (1...8).contains(renderThreads) else { throw ValidationError("--render-threads must be 1…8") }
    }

    func run() async throws {
        // Tasks run on NIO's event loops instead of libdispatch's pool, which starts a worker thread
        // whenever a job arrives while its workers are busy: a burst of requests starts no thread.
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        let token = self.token ?? ProcessInfo.processInfo.environment["DIGEST_SERVE_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        let serverConfiguration = PreviewServer<SQLiteDatabase>.Configuration(host: host, port: port, bearerToken: token)
        guard serverConfiguration.isLoopback || token != nil else {
            throw CommandError("--host \(host) is reachable from other machines: set a bearer token with --token or DIGEST_SERVE_TOKEN")
        }
        let missing = PreviewRenderer.missingFonts()
        if !missing.isEmpty {
            printError("warning: fonts missing (\(missing.joined(separator: ", "))): previews use fallbacks; run scripts/setup.sh as root")
        }
        let plan = self.plan
        let directory = try plan.templatesDirectory()
        _ = try TemplateCatalog(directory: directory)  // fail now, not on the first request
        if let compareTemplates {
            do { _ = try TemplateCatalog(directory: URL(fileURLWithPath: compareTemplates)) } catch {
                throw CommandError("--compare-templates \(compareTemplates): \(error)")
            }
        }
        let devices = try testDevices.map { try TestDevices.load($0) }
        try await database.withStore(existing: true) { try await serve($0, directory: directory, token: token, devices: devices) }
    }

    private func serve<Database: DigestDatabase>(_ store: Database, directory: URL, token: String?, devices: TestDevices?) async throws {
        let plan = self.plan
        var serverConfiguration = PreviewServer<Database>.Configuration(host: host, port: port, bearerToken: token)
        serverConfiguration.testSending = devices.map { testSending(to: $0, store: store) }
        var catalogConfiguration = PreviewCatalog<Database>.Configuration(templatesDirectory: directory) { week in
            // Checked by validate(): the options' delivery settings parse.
            (try? plan.configuration(week: week).compose) ?? BatchComposer.Configuration(week: week)
        }
        catalogConfiguration.byteBudget = plan.byteBudget
        catalogConfiguration.scale = scale
        catalogConfiguration.compareTemplatesDirectory = compareTemplates.map { URL(fileURLWithPath: $0) }
        let pool = PreviewPool(threads: renderThreads, configuration: pictures.configuration(allowFileURLs: false), warmUp: scale)
        defer { pool.shutdown() }
        let host = self.host
        try await pictures.withProvider { attachments in
            // Computed previews go through the run's image pipeline when --attachments is given.
            var catalogConfiguration = catalogConfiguration
            catalogConfiguration.attachments = attachments
            let catalog = PreviewCatalog(database: store, configuration: catalogConfiguration, pool: pool)
            let server = PreviewServer(catalog: catalog, configuration: serverConfiguration)
            try await server.run { port in
                let line = "serving previews on http://\(host.contains(":") ? "[\(host)]" : host):\(port)/\(token != nil ? "?token=…" : "")\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            }
        }
    }

    /// "Send to my device": `devices` listed with their tokens masked (and marked unavailable when
    /// no credentials for their provider were given), each send `send-test`'s, with these flags'
    /// credentials; a send the provider or its credentials refused answers as refused (502), one
    /// without credentials as unavailable (503).
    private func testSending<Database: DigestDatabase>(to devices: TestDevices, store: Database) -> TestSending {
        let providers = self.providers
        let listed = devices.entries.map { entry in
            let provider = entry.device.provider
            return TestSending.Device(
                name: entry.name, provider: provider, platform: entry.device.platform, target: entry.device.maskedToken,
                unavailable: providers.hasCredentials(for: provider)
                    ? nil : "serve was started without \(provider.displayName) credentials (\(provider.credentialsHint))")
        }
        return TestSending(devices: listed) { request in
            let device = try devices.named(request.device)
            do {
                let sent = try await providers.testSend(
                    to: device, user: request.user, week: request.week, database: store, templates: request.templates,
                    configuration: request.planning, perMinute: SendTestCommand.perMinute)
                return TestSending.Result(
                    messageID: sent.message.messageID, variant: sent.message.variant, source: sent.message.fromOutbox ? .outbox : .composed,
                    device: device.name, receipt: sent.receipt.isEmpty ? nil : sent.receipt)
            } catch let error as SenderError {
                throw TestSendError(error.code == .credentials ? .unavailable : .refused, "\(device.name): \(error)")
            }
        }
    }
}
