import NIOCore

/// Between TLS and `NIOHTTP2Handler`, under ``FakeHTTPServer/StreamLimit/oneUntilFirstSuccess(then:)``:
/// rewrites SETTINGS_MAX_CONCURRENT_STREAMS in the SETTINGS frames the server sends, so the client
/// reads APNs's numbers (1 in the first, then `raisedLimit`) while NIO's connection state machine holds
/// a limit it never reaches (NIO treats a stream beyond its limit as a connection error; APNs, and
/// ``FakeHTTP2Handler``, refuse just that stream).
///
/// It follows the outbound byte stream frame by frame (9-byte headers, payloads skipped), whatever
/// the writes' boundaries.
final class MaxConcurrentStreamsRewriter: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let raisedLimit: UInt32
    private var settingsFramesSeen = 0
    /// The frame header being read (fewer than 9 bytes so far).
    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to come.
    private var payloadLeft = 0
    /// Inside a SETTINGS payload: the offset reached in it, and the current entry's identifier bytes.
    private var inSettings = false
    private var settingsOffset = 0
    private var entryID: UInt16 = 0

    init(raisedLimit: Int) { self.raisedLimit = UInt32(clamping: raisedLimit) }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var buffer) = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        var index = buffer.readerIndex
        let end = buffer.writerIndex
        while index < end {
            if payloadLeft == 0 {
                header.append(buffer.getInteger(at: index)!)
                index += 1
                if header.count == 9 {
                    payloadLeft = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                    // SETTINGS (type 4) without ACK (flag 1).
                    inSettings = header[3] == 0x4 && header[4] & 0x1 == 0
                    if inSettings { settingsFramesSeen += 1 }
                    settingsOffset = 0
                    header.removeAll(keepingCapacity: true)
                }
            } else if inSettings {
                let position = settingsOffset % 6
                let byte: UInt8 = buffer.getInteger(at: index)!
                switch position {
                case 0: entryID = UInt16(byte) << 8
                case 1: entryID |= UInt16(byte)
                default:
                    if entryID == 0x3 {  // SETTINGS_MAX_CONCURRENT_STREAMS
                        let value: UInt32 = settingsFramesSeen == 1 ? 1 : raisedLimit
                        buffer.setInteger(UInt8(truncatingIfNeeded: value >> (8 * UInt32(5 - position))), at: index)
                    }
                }
                settingsOffset += 1
                payloadLeft -= 1
                index += 1
            } else {
                let skip = min(payloadLeft, end - index)
                payloadLeft -= skip
                index += skip
            }
        }
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }
}
