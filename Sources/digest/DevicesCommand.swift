import ArgumentParser
import DigestCore
import DigestStore

/// `digest devices`: the device tokens the store remembers about.
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "Device tokens: bring back one FCM called unregistered.", subcommands: [Revive.self])

    struct Revive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send to a token FCM called UNREGISTERED again (as if the app had registered it anew).",
            discussion: """
                A token FCM answered UNREGISTERED is remembered as dead, and later runs leave it out (counted as \
                dead_token) even when the users file lists it again, until the app registers it after its death \
                (a device entry's "registeredAt"). This forgets the death by hand.
                """)

        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The device token, whole.") var token: String

        func run() async throws {
            let masked = Device(token: token, platform: .android).maskedToken
            if try await database.withStore(existing: true, { try await $0.reviveToken(token) }) {
                print("token \(masked) is alive again: the next runs send to it")
            } else {
                print("token \(masked) was not dead: nothing to do")
            }
        }
    }
}
