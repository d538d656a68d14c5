/* http.c: nmt-server's HTTP/1.1 layer on libmicrohttpd (server.h).
 *
 * A thread per connection (the handler of a translation waits for its
 * requests; the service does the batching), at most max_connections open
 * (and max_connections_per_ip from one address). A connection has timeout_s
 * to send a whole request, however slowly it sends (close_stalled), and may
 * idle as long between requests; so a slow client holds its thread for
 * timeout_s at most. A body is read up to max_body_bytes; past it the rest
 * is discarded and the answer is 413. Every answer is counted by status
 * class; while draining, new requests get 503. */
#include "server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* One open connection (libmicrohttpd's socket context), in s->connections
 * under s->lock: the time it began waiting for a request. */
struct server_connection {
    server_connection *prev, *next;
    int fd;
    double since;  /* connected, or its last answer sent */
    int answering; /* a whole request arrived: the time limit is off until its answer */
    int closed;    /* shut down by close_stalled */
};

double server_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static server_connection *connection_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* A whole request arrived (answering 1) or its answer went (0). */
static void set_answering(server *s, struct MHD_Connection *c, int answering)
{
    server_connection *conn = connection_of(c);
    if (!conn)
        return;
    pthread_mutex_lock(&s->lock);
    conn->answering = answering;
    conn->since = server_now();
    pthread_mutex_unlock(&s->lock);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    server *s = cls;
    server_connection *conn = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn = info ? calloc(1, sizeof *conn) : NULL;
        if (!conn)
            return; /* untracked: only libmicrohttpd's idle timeout applies */
        conn->fd = info->connect_fd;
        conn->since = server_now();
        pthread_mutex_lock(&s->lock);
        conn->next = s->connections;
        if (s->connections)
            s->connections->prev = conn;
        s->connections = conn;
        pthread_mutex_unlock(&s->lock);
        *socket_context = conn;
        return;
    }
    if (!conn)
        return;
    /* Before libmicrohttpd closes the socket: close_stalled never touches a
     * closed (or reused) descriptor. */
    pthread_mutex_lock(&s->lock);
    if (conn->prev)
        conn->prev->next = conn->next;
    else
        s->connections = conn->next;
    if (conn->next)
        conn->next->prev = conn->prev;
    pthread_mutex_unlock(&s->lock);
    free(conn);
    *socket_context = NULL;
}

void server_http_close_stalled(server *s)
{
    const double now = server_now();
    pthread_mutex_lock(&s->lock);
    for (server_connection *conn = s->connections; conn; conn = conn->next)
        if (!conn->answering && !conn->closed && now - conn->since > s->settings.timeout_s) {
            /* its thread sees the end of the stream and closes the connection */
            shutdown(conn->fd, SHUT_RDWR);
            conn->closed = 1;
        }
    pthread_mutex_unlock(&s->lock);
}

/* One request's state across libmicrohttpd's calls. */
typedef struct request_state {
    char *body;
    size_t length, capacity;
    int too_large;
    int counted; /* in s->in_flight */
} request_state;

static void set_text(server_response *out, unsigned code, const char *type, const char *text)
{
    out->code = code;
    out->content_type = type;
    out->body = strdup(text);
    out->length = out->body ? strlen(out->body) : 0;
}

/* Appends upload data, up to the limit. */
static void append_body(server *s, request_state *st, const char *data, size_t size)
{
    if (st->too_large)
        return;
    if (st->length + size > (size_t)s->settings.max_body_bytes) {
        st->too_large = 1;
        return;
    }
    if (st->length + size + 1 > st->capacity) {
        size_t grown = st->capacity ? 2 * st->capacity : 4096;
        while (grown < st->length + size + 1)
            grown *= 2;
        char *p = realloc(st->body, grown);
        if (!p) {
            st->too_large = 1; /* answered 413: the server cannot hold it */
            return;
        }
        st->body = p;
        st->capacity = grown;
    }
    memcpy(st->body + st->length, data, size);
    st->length += size;
}

/* A 405 with the Allow header HTTP requires (RFC 9110, 15.5.6). */
static void wrong_method(server_response *out, const char *allow)
{
    char message[64];
    snprintf(message, sizeof message, "use %s", allow);
    server_error(out, 405, message);
    out->allow = allow;
}

/* The model id after OpenNMT-py's unload route (with or without its
 * /translator root, as /models and /health), or NULL for another path. */
static const char *unload_id(const char *url)
{
    static const char kPath[] = "/unload_model/", kRoot[] = "/translator";
    if (!strncmp(url, kRoot, strlen(kRoot)))
        url += strlen(kRoot);
    return strncmp(url, kPath, strlen(kPath)) ? NULL : url + strlen(kPath);
}

static void route(server *s, const char *url, const char *method, request_state *st,
                  server_response *out)
{
    const int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    const int post = !strcmp(method, "POST");
    const char *id;
    if (!strcmp(url, "/translator/translate") || !strcmp(url, "/translator/score")) {
        if (!post)
            wrong_method(out, "POST");
        else if (st->too_large)
            server_error(out, 413, "the body is larger than max_body_bytes");
        else if (!strcmp(url, "/translator/score"))
            server_score(s, st->body ? st->body : "", st->length, out);
        else
            server_translate(s, st->body ? st->body : "", st->length, out);
    } else if (!strcmp(url, "/health") || !strcmp(url, "/translator/health")) {
        if (get)
            set_text(out, 200, "application/json", "{\"status\":\"ok\"}");
        else
            wrong_method(out, "GET, HEAD");
    } else if (!strcmp(url, "/translator/models") || !strcmp(url, "/models")) {
        if (get)
            server_list_models(s, out);
        else
            wrong_method(out, "GET, HEAD");
    } else if ((id = unload_id(url)) != NULL) {
        if (!strcmp(method, "GET") || post) /* not HEAD: it unloads */
            server_unload_model(s, id, out);
        else
            wrong_method(out, "GET, POST");
    } else if (!strcmp(url, "/metrics")) {
        if (!get) {
            wrong_method(out, "GET, HEAD");
            return;
        }
        out->code = 200;
        out->content_type = "text/plain; version=0.0.4";
        out->body = server_metrics_text(&s->metrics, s->models);
        out->length = out->body ? strlen(out->body) : 0;
    } else if (!strcmp(url, "/")) {
        if (get)
            set_text(out, 200, "text/html; charset=utf-8", server_page_html);
        else
            wrong_method(out, "GET, HEAD");
    } else {
        server_error(out, 404, "no such path");
    }
}

static enum MHD_Result send_response(struct MHD_Connection *c, server_response *r)
{
    if (!r->body) /* the body could not be built */
        set_text(r, 500, "application/json", "{\"error\":\"out of memory\",\"status\":\"error\"}");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r->length, r->body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(r->body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", r->content_type ? r->content_type
                                                                  : "application/json");
    if (r->retry_after > 0) {
        char seconds[16];
        snprintf(seconds, sizeof seconds, "%d", r->retry_after);
        MHD_add_response_header(resp, "Retry-After", seconds);
    }
    if (r->allow)
        MHD_add_response_header(resp, "Allow", r->allow);
    const enum MHD_Result ok = MHD_queue_response(c, r->code, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)version;
    server *s = cls;
    request_state *st = *con_cls;
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st)
            return MHD_NO;
        *con_cls = st;
        pthread_mutex_lock(&s->lock);
        st->counted = 1;
        s->in_flight++;
        pthread_mutex_unlock(&s->lock);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        append_body(s, st, upload_data, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    set_answering(s, c, 1);
    server_response r = {0};
    pthread_mutex_lock(&s->lock);
    const int draining = s->draining;
    pthread_mutex_unlock(&s->lock);
    if (draining)
        server_error(&r, 503, "the server is shutting down");
    else
        route(s, url, method, st, &r);
    server_metrics_response(&s->metrics, r.code);
    return send_response(c, &r);
}

/* Called when a request's answer is sent (or its connection failed). */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)why;
    server *s = cls;
    set_answering(s, c, 0); /* a kept-alive connection: the limit runs again */
    request_state *st = *con_cls;
    if (!st)
        return;
    if (st->counted) {
        pthread_mutex_lock(&s->lock);
        s->requests++;
        if (--s->in_flight == 0)
            pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->lock);
    }
    free(st->body);
    free(st);
    *con_cls = NULL;
}

int server_http_start(server *s, int *port, char *message, size_t size)
{
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)s->settings.port);
    if (inet_pton(AF_INET, s->settings.host, &addr.sin_addr) != 1) {
        snprintf(message, size, "--host %s: not an IPv4 address", s->settings.host);
        return -1;
    }
    s->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0, NULL,
        NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->settings.max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->settings.max_connections_per_ip,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->settings.timeout_s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(message, size, "cannot listen on %s:%d (in use, or not allowed)",
                 s->settings.host, s->settings.port);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? (int)info->port : s->settings.port;
    return 0;
}

void server_http_stop(server *s)
{
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}
