//! The meta-scheduler's web dashboard, served beside `/metrics` on the HTTP
//! endpoint (`metrics_listen`): the sites with their reachability, Load / Count arrays, machines
//! and licence pools; the queues by state and priority; the running jobs; recent events; a Gantt
//! view per cluster; and a page per job with its explain text and its events.
//!
//! A job's page shows the end of its standard output and error, fetched through the grid from
//! its site, with `/job/ID/stdout`, `/job/ID/stderr` and `/job/ID/files/NAME` serving the whole.
//!
//! Pages are rendered on the server (plain HTML and inline SVG, refreshed every few seconds), so
//! they work without JavaScript and load in one request; `/api/overview` gives the same data as
//! JSON for scripts. With `[auth]` users configured the dashboard asks for a token (header
//! `Authorization: Bearer`, cookie `gridsched_token`, or `?token=` once, which sets the cookie)
//! and shows a user only their own jobs, as the gRPC API does.

mod dag;
mod gantt;
pub(crate) mod html;
mod pages;

use crate::MetaService;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use gridsched_proto::v1;
use gridsched_security::Caller;
use std::collections::HashMap;

const COOKIE: &str = "gridsched_token";

/// The dashboard's routes, to serve beside `/metrics`.
pub fn routes(service: MetaService) -> axum::Router {
    axum::Router::new()
        .route("/", axum::routing::get(overview))
        .route("/job/{id}", axum::routing::get(job))
        .route("/job/{id}/stdout", axum::routing::get(job_stdout))
        .route("/job/{id}/stderr", axum::routing::get(job_stderr))
        .route("/job/{id}/files/{*name}", axum::routing::get(job_file))
        .route("/api/overview", axum::routing::get(overview_json))
        .with_state(service)
}

/// Who is looking: the caller (`None` when authentication is off) and the token to pass on to
/// the gRPC handlers.
struct Viewer {
    caller: Option<Caller>,
    token: Option<String>,
}

impl Viewer {
    fn sees(&self, job: &gridsched_proto::v1::Job) -> bool {
        let owner = job.spec.as_ref().map_or("", |s| s.user.as_str());
        self.caller.as_ref().is_none_or(|c| c.may_access(owner))
    }

    /// A gRPC request carrying the viewer's token.
    fn request<T>(&self, msg: T) -> tonic::Request<T> {
        let mut r = tonic::Request::new(msg);
        if let Some(v) = self
            .token
            .as_ref()
            .and_then(|t| format!("Bearer {t}").parse().ok())
        {
            r.metadata_mut().insert("authorization", v);
        }
        r
    }
}

fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            c.trim()
                .strip_prefix(&format!("{COOKIE}="))
                .map(str::to_owned)
        })
}

/// Authenticates a page request; `Err` is the response to send instead (login form, or the
/// redirect that stores a `?token=` in a cookie).
fn viewer(
    svc: &MetaService,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    path: &str,
) -> Result<Viewer, Box<Response>> {
    let tokens = &svc.inner.tokens;
    if !tokens.enabled() {
        return Ok(Viewer {
            caller: None,
            token: None,
        });
    }
    if let Some(t) = query.get("token") {
        let mut h = HeaderMap::new();
        let cookie = format!("{COOKIE}={t}; Path=/; HttpOnly; SameSite=Strict");
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            h.insert(header::SET_COOKIE, v);
        }
        if let Ok(v) = HeaderValue::from_str(path) {
            h.insert(header::LOCATION, v);
        }
        return Err(Box::new((StatusCode::SEE_OTHER, h).into_response()));
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_owned());
    let token = bearer.or_else(|| cookie_token(headers));
    let refused =
        |msg: &str| (StatusCode::UNAUTHORIZED, Html(pages::login(msg, path))).into_response();
    let Some(token) = token else {
        return Err(Box::new(refused("This grid requires a token.")));
    };
    match tokens.caller_of_token(&token) {
        Ok(c) => Ok(Viewer {
            caller: Some(c),
            token: Some(token),
        }),
        Err(_) => Err(Box::new(refused("Unknown token."))),
    }
}

async fn overview(
    State(svc): State<MetaService>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let v = match viewer(&svc, &headers, &q, "/") {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let window = q
        .get("window")
        .and_then(|w| w.parse::<i64>().ok())
        .filter(|w| *w > 0);
    match pages::Overview::gather(&svc, &v, window).await {
        Ok(o) => Html(o.render()).into_response(),
        Err(s) => error(&s),
    }
}

async fn overview_json(
    State(svc): State<MetaService>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let v = match viewer(&svc, &headers, &q, "/api/overview") {
        Ok(v) => v,
        Err(r) => return *r,
    };
    match pages::Overview::gather(&svc, &v, None).await {
        Ok(o) => ([(header::CONTENT_TYPE, "application/json")], o.json()).into_response(),
        Err(s) => error(&s),
    }
}

async fn job(
    State(svc): State<MetaService>,
    Path(id): Path<u64>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let v = match viewer(&svc, &headers, &q, &format!("/job/{id}")) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    match pages::job_page(&svc, &v, id).await {
        Ok(page) => Html(page).into_response(),
        Err(s) => error(&s),
    }
}

async fn job_stdout(
    State(svc): State<MetaService>,
    Path(id): Path<u64>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    job_output(svc, id, headers, q, v1::OutputStream::Stdout, String::new()).await
}

async fn job_stderr(
    State(svc): State<MetaService>,
    Path(id): Path<u64>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    job_output(svc, id, headers, q, v1::OutputStream::Stderr, String::new()).await
}

async fn job_file(
    State(svc): State<MetaService>,
    Path((id, name)): Path<(u64, String)>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    job_output(svc, id, headers, q, v1::OutputStream::Unspecified, name).await
}

/// A job's standard stream, or its declared file `file`, as the viewer may read it: plain text
/// for a stream, bytes for a file.
async fn job_output(
    svc: MetaService,
    id: u64,
    headers: HeaderMap,
    q: HashMap<String, String>,
    stream: v1::OutputStream,
    file: String,
) -> Response {
    let v = match viewer(&svc, &headers, &q, &format!("/job/{id}")) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    match pages::read_output(&svc, &v, id, stream, &file).await {
        Ok(data) => {
            let kind = match file.is_empty() {
                true => "text/plain; charset=utf-8",
                false => "application/octet-stream",
            };
            ([(header::CONTENT_TYPE, kind)], data).into_response()
        }
        Err(s) => error(&s),
    }
}

fn error(s: &tonic::Status) -> Response {
    let code = match s.code() {
        tonic::Code::NotFound => StatusCode::NOT_FOUND,
        tonic::Code::InvalidArgument => StatusCode::BAD_REQUEST,
        tonic::Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        tonic::Code::PermissionDenied => StatusCode::FORBIDDEN,
        tonic::Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (code, Html(pages::error_page(code.as_u16(), s.message()))).into_response()
}
