import ArgumentParser
import DigestSender
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `digest webpush`: the standard Web Push (VAPID) key.
struct WebPushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webpush", abstract: "Standard Web Push: make the VAPID key.", subcommands: [Keygen.self])

    struct Keygen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a VAPID key (ECDSA P-256) and print its public key.",
            discussion: """
                Writes the private key as PKCS#8 PEM, readable by its owner only (mode 0600), and never over an \
                existing file (exit status 73). Prints the public key (base64url): a site's page passes it to \
                pushManager.subscribe() as applicationServerKey, and the subscriptions it makes accept only \
                messages signed with this key: keep the file, a new key means new subscriptions.
                """)

        @Option(name: .customLong("out"), help: ArgumentHelp("The file to write the private key to.", valueName: "file"))
        var out: String

        func run() async throws {
            let key = VAPIDKey.generate()
            do {
                try Self.create(out, contents: Array(key.pkcs8PEM.utf8))
            } catch {
                FileHandle.standardError.write(Data("error: \(error)\n".utf8))
                throw ExitStatus.cannotCreate
            }
            print(key.publicKey)
            print("the public key of \(out): a page passes it to pushManager.subscribe() as applicationServerKey")
        }

        /// Writes `contents` to a new file at `path` with mode 0600; an existing file (or link) is
        /// left alone and refused.
        static func create(_ path: String, contents: [UInt8]) throws(CommandError) {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                let reason = errno == EEXIST ? "the file exists: it is not overwritten (a new key means new subscriptions); remove it first or choose another path" : String(cString: strerror(errno))
                throw CommandError("\(path): \(reason)")
            }
            defer { close(fd) }
            guard fchmod(fd, 0o600) == 0 else { throw CommandError("\(path): \(String(cString: strerror(errno)))") }
            var written = 0
            while written < contents.count {
                let n = contents[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                guard n > 0 else {
                    let reason = String(cString: strerror(errno))
                    unlink(path)
                    throw CommandError("\(path): \(reason)")
                }
                written += n
            }
            guard fsync(fd) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(path)
                throw CommandError("\(path): \(reason)")
            }
        }
    }
}
