//! A cancellation flag shared by the runner, the load driver and the signal handler.

use tokio::sync::watch;

#[derive(Clone)]
pub struct Cancel {
    tx: std::sync::Arc<watch::Sender<bool>>,
}

impl Default for Cancel {
    fn default() -> Self {
        Self::new()
    }
}

impl Cancel {
    pub fn new() -> Self {
        let (tx, _rx) = watch::channel(false);
        Cancel {
            tx: std::sync::Arc::new(tx),
        }
    }
    pub fn cancel(&self) {
        self.tx.send_replace(true);
    }
    pub fn is_cancelled(&self) -> bool {
        *self.tx.borrow()
    }
    /// Resolves once `cancel` has been called (immediately if it already was).
    pub async fn cancelled(&self) {
        let mut rx = self.tx.subscribe();
        // An error means the sender is gone, which cannot happen while `self` holds it.
        let _ = rx.wait_for(|v| *v).await;
    }
}
