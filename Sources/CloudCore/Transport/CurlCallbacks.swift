import CCurl

// libcurl's C callbacks. They cannot capture context: the transfer arrives as the user-data
// pointer (an unretained `Unmanaged<CurlTransfer>`; the loop keeps the transfer alive in its
// table of running transfers until libcurl is done with the handle). They run on the loop thread.

/// CURLOPT_WRITEFUNCTION.
let curlWriteCallback: jr_data_callback = { bytes, size, count, context in
    guard let bytes, let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receiveBody(UnsafeMutableRawPointer(bytes), size * count)
}

/// CURLOPT_HEADERFUNCTION.
let curlHeaderCallback: jr_data_callback = { bytes, size, count, context in
    guard let bytes, let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: bytes, count: size * count))
    return size * count
}

/// CURLOPT_READFUNCTION.
let curlReadCallback: jr_data_callback = { bytes, size, count, context in
    guard let bytes, let context else { return Int(CURL_READFUNC_ABORT) }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.readBody(into: UnsafeMutableRawPointer(bytes), capacity: size * count)
}

/// CURLOPT_SEEKFUNCTION (SEEK_SET only; libcurl uses nothing else for rewinding).
let curlSeekCallback: jr_seek_callback = { context, offset, origin in
    guard let context, origin == SEEK_SET else { return CURL_SEEKFUNC_CANTSEEK }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.seekBody(to: Int64(offset)) ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL
}
