//! Graceful shutdown: the future the HTTP server waits on (a call to `Server::shutdown`, or
//! SIGINT / SIGTERM when the server handles signals). A second signal exits at once.

use std::sync::Arc;

use tokio::sync::Notify;

/// Resolves when the server should stop accepting requests.
pub async fn requested(stop: Arc<Notify>, handle_signals: bool) {
    if !handle_signals {
        stop.notified().await;
        return;
    }
    tokio::select! {
        _ = stop.notified() => {}
        _ = signal() => {
            eprintln!("nucleus serve: shutting down (running requests may finish; a second signal exits at once)");
            tokio::spawn(async {
                signal().await;
                eprintln!("nucleus serve: second signal, exiting now");
                std::process::exit(130);
            });
        }
    }
}

/// SIGINT or SIGTERM (Ctrl-C elsewhere).
async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
