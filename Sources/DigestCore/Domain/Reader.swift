/// A user of the reading app, as the weekly run sees them.
public struct Reader: Sendable, Hashable {
    /// The app's own user id.
    public var id: String
    /// BCP 47 locale, for example `pl-PL`.
    public var locale: String
    /// IANA time zone, for example `Europe/Warsaw`.
    public var timeZone: String
    /// A user who opted out receives nothing: ``ReaderPreferences/off``.
    public var optedOut: Bool {
        get { preferences.off }
        set { preferences.off = newValue }
    }
    /// What the reader chose (the stores read them with the reader; defaults when none).
    public var preferences = ReaderPreferences()
    /// The devices the user's notifications go to: as the stores read them, at most
    /// ``DeviceSelection/limit``, in ``DeviceSelection`` order.
    public var devices: [Device]
    /// Devices left out of ``devices`` because FCM called their token unregistered (and the app has
    /// not registered it again since): counted as `dead_token` in the run's report.
    public var deadTokens = 0
    /// Live devices left out of ``devices`` because the reader has more than
    /// ``DeviceSelection/limit``: counted as `over_limit` in the run's report.
    public var devicesOverLimit = 0

    public init(id: String, locale: String, timeZone: String, optedOut: Bool, devices: [Device]) {
        self.id = id
        self.locale = locale
        self.timeZone = timeZone
        self.devices = devices
        self.optedOut = optedOut
    }
}

/// One registered device of a user.
public struct Device: Sendable, Hashable {
    /// The token the provider knows the device by: an FCM registration token, an APNs device token
    /// (lower-case hex), or a Web Push subscription's endpoint URL. Never logged whole: use
    /// ``maskedToken``.
    public var token: String
    public var platform: Platform
    /// When the app last registered the token (Unix seconds; `nil`: not said). A token FCM called
    /// unregistered is alive again once registered after that; of a token listed under several
    /// readers, the latest registration wins.
    public var registeredAt: Int64?
    /// The app's bundle id, a direct APNs request's `apns-topic`, for publishers with several apps
    /// (`nil`: ``APNsEncoder/Configuration/topic``).
    public var topic: String?
    /// The push service the device's messages go through.
    public var provider: Provider
    /// A Web Push subscription's keys, which its messages are encrypted to; `nil` for the other
    /// providers (and for a Web Push device whose store row has none, which the composer leaves out).
    package var subscriptionKeys: SubscriptionKeys?

    public init(token: String, platform: Platform, registeredAt: Int64? = nil, topic: String? = nil, provider: Provider = .fcm) {
        self.token = token
        self.platform = platform
        self.registeredAt = registeredAt
        self.topic = topic
        self.provider = provider
    }

    /// Any device, its subscription keys included (what the stores read back).
    package init(
        token: String, platform: Platform, registeredAt: Int64?, topic: String?, provider: Provider, subscriptionKeys: SubscriptionKeys?
    ) {
        self.init(token: token, platform: platform, registeredAt: registeredAt, topic: topic, provider: provider)
        self.subscriptionKeys = subscriptionKeys
    }

    /// A browser's Web Push subscription: its endpoint is the device's token, its platform the web.
    package init(endpoint: String, keys: SubscriptionKeys, registeredAt: Int64? = nil) {
        self.init(token: endpoint, platform: .web, registeredAt: registeredAt, topic: nil, provider: .webpush, subscriptionKeys: keys)
    }

    /// The keys of a browser's push subscription as it gave them (`PushSubscription.toJSON().keys`,
    /// base64url text), as the stores keep them. The import checked them with
    /// ``WebPushSubscriptionKeys``; they are secrets of the subscription, never logged.
    package struct SubscriptionKeys: Sendable, Hashable {
        /// The user agent's P-256 public key, base64url of its 65-byte uncompressed point.
        package var p256dh: String
        /// The 16-byte authentication secret, base64url.
        package var auth: String

        package init(p256dh: String, auth: String) {
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    /// The token shortened for logs and errors: its last four characters (an endpoint's origin too).
    public var maskedToken: String { Self.masked(token) }

    /// Any token shortened so: `…` and its last four characters. A Web Push endpoint (an `https://`
    /// URL) keeps its origin, which names the push service and not the subscriber:
    /// `https://fcm.googleapis.com/…Xk9Q`.
    package static func masked(_ token: String) -> String {
        let tail = "…" + String(token.suffix(4))
        guard let origin = origin(ofEndpoint: token) else { return tail }
        return origin + "/" + tail
    }

    /// `scheme://host[:port]` of an `http(s)://` URL, or `nil` for anything else (an FCM or APNs
    /// token). The import admits only endpoints that are `https://` URLs with a host.
    package static func origin(ofEndpoint token: String) -> String? {
        for scheme in ["https://", "http://"] where token.hasPrefix(scheme) {
            let rest = token.dropFirst(scheme.count)
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            // User information (`user:secret@`) is not part of an origin and may be a secret.
            let host = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
            return host.isEmpty ? nil : scheme + host
        }
        return nil
    }
}
