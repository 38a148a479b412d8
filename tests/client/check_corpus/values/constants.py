import lightning as L

NUM_CORES = 5
PRECISION = "16-mixed"
CORES = [0, 1]
NEGATIVE = -1
trainer = L.Trainer(accelerator="tpu", devices=NUM_CORES, precision=PRECISION)
trainer2 = L.Trainer(accelerator="tpu", devices=CORES)
trainer3 = L.Trainer(accelerator="tpu", devices=NEGATIVE)
