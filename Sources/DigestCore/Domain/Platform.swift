/// The kind of device a token belongs to; decides which FCM section its message carries.
public enum Platform: String, Sendable, Hashable, CaseIterable, Codable {
    case android
    case ios
    case web
}
