import { Injectable, OnModuleInit } from '@nestjs/common';
import { Bus } from '@skald/messaging/bus-port';
import { ImagesService } from './images.service';

/** NATS edge of `tools.image` (the session worker asks it for a vision client's images). */
@Injectable()
export class ImagesHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly images: ImagesService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('tools.image', (req) => this.images.image(req));
  }
}
