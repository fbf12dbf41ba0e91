package import DigestCore
import DigestImport
package import DigestStore
import Foundation
package import Hummingbird
import NIOCore

/// The readers' preferences for the publisher's backend, on `digest collect` (docs/009-events.md,
/// "Preferences API"): the app's settings screen talks to the publisher, which calls us with a server
/// key. App keys ship inside apps and are refused here.
///
/// - `GET /v1/readers/{id}/preferences` → `{"preferences":{…every key…},"version":N}` and `ETag: "N"`;
/// - `PUT` (the whole object, `application/json`) and `PATCH` (JSON merge patch, RFC 7396,
///   `application/merge-patch+json` or `application/json`) of that path → 200 with the same shape;
///   `If-Match: "N"` → 412 when the version moved;
/// - `GET /v1/readers/{id}/preferences/changes?limit=N` → `{"changes":[…]}`, newest first.
///
/// 401 without a key or with one in neither file, 403 with an app key, 404 for a reader the store does
/// not hold, 400 listing every bad value, 409 when the preferences come from the publisher's own
/// view (PostgreSQL), 413 over ``maxBodyBytes``, 415 for another content type.
package struct PreferencesAPI: Sendable {
    package let store: any PreferenceStore
    /// The keys of the publisher's backend (`--server-key-file`).
    package let serverKeys: AppKeys
    /// The apps' keys (`--key-file`), which are refused with 403 rather than 401.
    package let appKeys: AppKeys
    /// Now, in Unix seconds: what a change is recorded at.
    package let now: @Sendable () -> Int64

    /// The largest body a `PUT` or `PATCH` takes.
    package static let maxBodyBytes = 65_536
    /// The most changes one answer lists.
    package static let maxChanges = 100

    package init(store: any PreferenceStore, serverKeys: AppKeys, appKeys: AppKeys, now: @escaping @Sendable () -> Int64) {
        self.store = store
        self.serverKeys = serverKeys
        self.appKeys = appKeys
        self.now = now
    }

    /// Adds the routes to `router`.
    package func add(to router: Router<BasicRequestContext>) {
        let api = self
        router.get("v1/readers/:id/preferences") { request, context in
            try await api.answer { try await api.get(request, context) }
        }
        router.put("v1/readers/:id/preferences") { request, context in
            try await api.answer { try await api.write(request, context, patch: false) }
        }
        router.patch("v1/readers/:id/preferences") { request, context in
            try await api.answer { try await api.write(request, context, patch: true) }
        }
        router.get("v1/readers/:id/preferences/changes") { request, context in
            try await api.answer { try await api.changes(request, context) }
        }
    }

    /// An answer the handlers give up with: a status and a JSON body.
    struct Refusal: Error {
        var status: HTTPResponse.Status
        var body: [UInt8]
        var headers = HTTPFields()

        /// `{"error":"…"}`.
        init(_ status: HTTPResponse.Status, _ message: String) {
            self.status = status
            var writer = JSONWriter(capacity: 64 + message.utf8.count)
            writer.beginObject()
            writer.field("error", message)
            writer.endObject()
            body = writer.bytes
        }

        /// `{"errors":[{"field":…,"reason":…,"message":…}]}`.
        init(problems: [(field: String, reason: String, message: String)]) {
            status = .badRequest
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("errors")
            writer.beginArray()
            for problem in problems {
                writer.beginObject()
                writer.field("field", problem.field)
                writer.field("reason", problem.reason)
                writer.field("message", problem.message)
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
            body = writer.bytes
        }
    }

    private func answer(_ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let refusal as Refusal {
            var headers = refusal.headers
            headers[.contentType] = "application/json"
            return Response(status: refusal.status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: refusal.body)))
        }
    }

    /// The reader's id from the path, percent-decoded (an id may hold `/` as `%2F`), after the key.
    private func authorizedReader(_ request: Request, _ context: BasicRequestContext) throws -> String {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            var refusal = Refusal(.unauthorized, "a server key is required: Authorization: Bearer <key> (--server-key-file)")
            refusal.headers[.wwwAuthenticate] = "Bearer"
            throw refusal
        }
        let key = String(header.dropFirst(7))
        if !serverKeys.accepts(key) {
            if appKeys.accepts(key) {
                throw Refusal(.forbidden, "an app key cannot read or change preferences: the publisher's backend calls with a server key")
            }
            var refusal = Refusal(.unauthorized, "the key is not a server key (--server-key-file)")
            refusal.headers[.wwwAuthenticate] = "Bearer"
            throw refusal
        }
        guard let raw = context.parameters.get("id"), let id = raw.removingPercentEncoding, !id.isEmpty else {
            throw Refusal(.notFound, "no reader id in the path")
        }
        return id
    }

    private func get(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let id = try authorizedReader(request, context)
        guard let stored = try await store.preferences(of: id) else { throw Refusal(.notFound, "no reader \(Self.quote(id))") }
        return Self.response(stored)
    }

    private func write(_ request: Request, _ context: BasicRequestContext, patch: Bool) async throws -> Response {
        let id = try authorizedReader(request, context)
        let type = (request.headers[.contentType] ?? "").split(separator: ";").first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        let accepted = patch ? ["application/merge-patch+json", "application/json"] : ["application/json"]
        guard let type, accepted.contains(type) else {
            throw Refusal(.unsupportedMediaType, "the body must be \(accepted.joined(separator: " or "))")
        }
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > Self.maxBodyBytes {
            throw Refusal(.contentTooLarge, "the body is over \(Self.maxBodyBytes) bytes")
        }
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: Self.maxBodyBytes)
        } catch {
            throw Refusal(.contentTooLarge, "the body is over \(Self.maxBodyBytes) bytes")
        }
        let body: JSONValue
        do {
            body = try JSONLineParser.parse(Array(buffer.readableBytesView))
        } catch {
            throw Refusal(problems: [("", "not_json", "the body is not JSON: \(error)")])
        }
        guard case .object = body else {
            throw Refusal(problems: [("", "not_an_object", "the body is \(body.kind), not a JSON object")])
        }
        let condition = try Self.ifMatch(request)
        // Without If-Match, a merge patch applies to whatever is stored: read, merge, write if the
        // version did not move meanwhile, else again.
        for _ in 0..<8 {
            var base = condition
            var object = body
            if patch {
                guard let stored = try await store.preferences(of: id) else { throw Refusal(.notFound, "no reader \(Self.quote(id))") }
                if let condition, condition != stored.version { throw Self.moved(stored) }
                base = stored.version
                object = Self.mergePatch(Self.value(of: stored.preferences), body)
            }
            let parsed = PreferenceFields.parse(object)
            guard let preferences = parsed.preferences, parsed.problems.isEmpty else {
                throw Refusal(problems: parsed.problems.map { ($0.field, $0.reason.rawValue, $0.message) })
            }
            switch try await store.setPreferences(of: id, to: preferences, ifVersion: base, source: .api, messageID: nil, at: now()) {
            case .stored(let stored):
                return Self.response(stored)
            case .noReader:
                throw Refusal(.notFound, "no reader \(Self.quote(id))")
            case .managedElsewhere:
                throw Refusal(
                    .conflict, "the preferences come from the publisher's own view (digest_reader_preferences): change them there")
            case .versionMoved(let current):
                if condition != nil || !patch { throw Self.moved(current) }
            }
        }
        throw Refusal(.conflict, "the preferences kept changing while this patch was applied: try again")
    }

    private func changes(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let id = try authorizedReader(request, context)
        var limit = Self.maxChanges
        if let given = request.uri.queryParameters.get("limit") {
            guard let value = Int(given), (1...Self.maxChanges).contains(value) else {
                throw Refusal(problems: [("limit", "bad_limit", "limit must be a whole number from 1 to \(Self.maxChanges)")])
            }
            limit = value
        }
        guard let changes = try await store.preferenceChanges(of: id, limit: limit) else {
            throw Refusal(.notFound, "no reader \(Self.quote(id))")
        }
        var writer = JSONWriter(capacity: 256 * max(1, changes.count))
        writer.beginObject()
        writer.key("changes")
        Self.write(changes, to: &writer)
        writer.endObject()
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: writer.bytes)))
    }

    /// `[{"at":…,"source":…,"message_id":…,"before":{…},"after":{…}}]`: what the API answers under
    /// `changes`, and `digest readers show --json` under `preference_changes`.
    package static func write(_ changes: [PreferenceChange], to writer: inout JSONWriter) {
        writer.beginArray()
        for change in changes {
            writer.beginObject()
            writer.field("at", Timestamp.format(change.at))
            writer.field("source", change.source.rawValue)
            writer.key("message_id")
            if let messageID = change.messageID { writer.value(messageID) } else { writer.raw(Array("null".utf8)) }
            writer.key("before")
            change.before.write(to: &writer)
            writer.key("after")
            change.after.write(to: &writer)
            writer.endObject()
        }
        writer.endArray()
    }

    /// `{"preferences":{…},"version":N}` with `ETag: "N"`.
    static func response(_ stored: StoredPreferences) -> Response {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.key("preferences")
        stored.preferences.write(to: &writer)
        writer.field("version", stored.version)
        writer.endObject()
        return Response(
            status: .ok, headers: [.contentType: "application/json", .eTag: "\"\(stored.version)\""],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: writer.bytes)))
    }

    /// 412 with the version now stored.
    static func moved(_ current: StoredPreferences) -> Refusal {
        var refusal = Refusal(.preconditionFailed, "the preferences are at version \(current.version) now: read them again")
        refusal.headers[.eTag] = "\"\(current.version)\""
        return refusal
    }

    /// The version `If-Match` asks for: `"N"` (`nil` without the header, or with `*`); any other tag
    /// can match no version (412).
    static func ifMatch(_ request: Request) throws -> Int? {
        guard let header = request.headers[.ifMatch]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if header == "*" { return nil }
        guard header.count >= 3, header.hasPrefix("\""), header.hasSuffix("\""), let version = Int(header.dropFirst().dropLast()),
            version >= 0
        else {
            throw Refusal(.preconditionFailed, "If-Match must be a version this API gave in an ETag, like \"3\"")
        }
        return version
    }

    /// The preferences as a JSON object a merge patch applies to (keys at their defaults left out:
    /// a patch that says nothing of them leaves them so).
    static func value(of preferences: ReaderPreferences) -> JSONValue {
        var object: [String: JSONValue] = [
            "every": .number(String(preferences.every)),
            "follow": .array(preferences.follow.map { .string($0) }),
            "mute": .array(preferences.mute.map { .string($0) }),
            "off": .bool(preferences.off),
        ]
        if let from = preferences.from { object["from"] = .string(from.description) }
        if let until = preferences.pausedUntil { object["pausedUntil"] = .string(until.description) }
        return .object(object)
    }

    /// RFC 7396: `patch` applied to `target` (an object patches key by key, `null` removes a key, any
    /// other value, lists included, replaces it whole).
    static func mergePatch(_ target: JSONValue, _ patch: JSONValue) -> JSONValue {
        guard case .object(let changes) = patch else { return patch }
        var result: [String: JSONValue] = [:]
        if case .object(let object) = target { result = object }
        for (key, value) in changes {
            if case .null = value {
                result[key] = nil
            } else {
                result[key] = mergePatch(result[key] ?? .null, value)
            }
        }
        return .object(result)
    }

    static func quote(_ id: String) -> String { JSONWriter.quoted(id) }
}
