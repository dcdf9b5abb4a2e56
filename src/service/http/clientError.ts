import type { Duplex } from 'node:stream';

/**
 * Requests Node's HTTP parser refuses before any handler runs (a request line plus headers over
 * its 16 KiB limit, as a long `filters` makes; bytes that are not HTTP) get the same JSON error
 * body as every other refusal, instead of Node's bare status line, and the connection closes.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'Request Header Fields Too Large: the request line and headers exceed 16 KiB; shorten the URL (filters, columns, sort_by) or the headers']
      : err.code === 'HPE_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'Request Timeout: the request did not arrive in time']
        : [400, 'Bad Request', 'Bad Request: the request is not valid HTTP/1.1'];
  const body = JSON.stringify({ error: message });
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}
