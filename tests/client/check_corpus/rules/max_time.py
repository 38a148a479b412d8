import datetime

import lightning as L

trainer = L.Trainer(accelerator="tpu", devices=8, max_time="1:02:00")
later = L.Trainer(accelerator="tpu", devices=3, max_time=datetime.timedelta(hours=1))
